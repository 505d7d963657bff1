#include "web/export.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <system_error>

#include "web/pages.hpp"

namespace kernelwatch::web {
namespace {

std::string reason(int error) {
  return std::strerror(error);
}

// Writes `content` to a new file beside `path` and renames it over `path`: whatever `path` was
// (a file, a symbolic link a hostile user planted to somewhere else), it is replaced, never
// opened, so nothing is ever written through a link; a reader never sees a half-written page.
core::Status write(const std::filesystem::path& path, std::string_view content,
                   std::size_t& files) {
  static std::atomic<unsigned> sequence{0};
  const auto fail = [&](int error) {
    return core::fail(core::ErrorCode::IoError,
                      "cannot write " + path.string() + ": " + reason(error));
  };
  std::filesystem::path temporary;
  int fd = -1;
  // O_EXCL: the name is new (an existing name, a link included, is never opened); the mode is
  // 0666 less the umask, as an ordinary file the report writes.
  for (int attempt = 0; fd < 0; ++attempt) {
    temporary = path;
    temporary += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(sequence++);
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt > 100)) return fail(errno);
  }
  const auto give_up = [&](int error) {
    ::close(fd);
    ::unlink(temporary.c_str());
    return fail(error);
  };
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return give_up(errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return fail(error);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return fail(error);
  }
  ++files;
  return {};
}

// A folder the report writes into: created when missing; one that is a symbolic link (or not a
// folder) is refused, so that no page lands outside DIR.
core::Status folder(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (S_ISLNK(info.st_mode)) {
      return core::fail(core::ErrorCode::IoError,
                        "cannot write into " + path.string() +
                            ": it is a symbolic link (refusing to write through it)");
    }
    if (!S_ISDIR(info.st_mode)) {
      return core::fail(core::ErrorCode::IoError,
                        "cannot write into " + path.string() + ": not a directory");
    }
    return {};
  }
  if (errno != ENOENT || ::mkdir(path.c_str(), 0777) != 0) {
    return core::fail(core::ErrorCode::IoError,
                      "cannot create " + path.string() + ": " + reason(errno));
  }
  return {};
}

}  // namespace

core::Result<ExportSummary> export_site(storage::Connection& store, const ReplayOptions& options,
                                        const std::filesystem::path& out) {
  // DIR itself may be a link the user chose; the folders inside it may not.
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    return core::fail(core::ErrorCode::IoError,
                      "cannot create " + out.string() + ": " + ec.message());
  }
  for (const char* name : {"keys", "alerts", "assets"}) KW_TRY(folder(out / name));
  ExportSummary summary;
  KW_TRY(write(out / "assets" / "kw.css", stylesheet(), summary.files));
  KW_TRY(write(out / "assets" / "kw.js", script(), summary.files));

  // The one whole replay: every key's row and every alert, as the daemon would show them.
  const auto site = KW_TRY(site_from_replay(store, options));
  const auto& rows = site.rows;
  summary.keys = rows.size();
  const std::size_t pages =
      std::max<std::size_t>(1, (rows.size() + kOverviewPageSize - 1) / kOverviewPageSize);
  for (std::size_t page = 1; page <= pages; ++page) {
    OverviewQuery query;
    query.page = page;
    KW_TRY(write(out / overview_file(page),
                 render_overview(rows, query, nullptr, LinkMode::Static, site.placed),
                 summary.files));
  }

  // Stored rows by key (incidents under each member's key); each key's page, then every
  // alert's page (the keys' own and the incidents).
  const auto stored = KW_TRY(storage::AlertStore(store).list(std::nullopt, 0));
  std::map<std::string, std::vector<storage::AlertRow>> stored_by_key;
  for (const auto& row : stored) {
    if (!core::is_incident(row.alert)) stored_by_key[row.alert.key.identity()].push_back(row);
    for (const auto& member : row.alert.members) {
      stored_by_key[member.key.identity()].push_back(row);
    }
  }
  for (const auto& row : rows) {
    const auto replay = KW_TRY(replay_key_id(store, row.key_id, options, site.alerts));
    const auto& key_stored = stored_by_key[row.key.identity()];
    for (const auto scale : {Scale::Linear, Scale::Log}) {
      KeyQuery query;
      query.scale = scale;
      KW_TRY(write(out / key_file(key_ref(replay.key), scale),
                   render_key(replay, key_stored, query, LinkMode::Static), summary.files));
    }
  }
  std::set<std::string> written;
  for (const auto& alert : site.alerts) {
    const std::string id = alert_page_id(alert);
    if (!written.insert(id).second) continue;
    const auto view = KW_TRY(find_alert(store, id, options, site.alerts));
    if (!view) continue;
    KW_TRY(write(out / alert_file(id), render_alert(*view, LinkMode::Static), summary.files));
    ++summary.alerts;
  }
  return summary;
}

}  // namespace kernelwatch::web
