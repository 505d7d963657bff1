#include "web/export.hpp"

#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include "web/pages.hpp"

namespace kernelwatch::web {
namespace {

core::Status write(const std::filesystem::path& path, std::string_view content,
                   std::size_t& files) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(content.data(), static_cast<std::streamsize>(content.size()));
  file.close();
  if (!file) {
    return core::fail(core::ErrorCode::IoError, "cannot write " + path.string());
  }
  ++files;
  return {};
}

}  // namespace

core::Result<ExportSummary> export_site(storage::Connection& store, const ReplayOptions& options,
                                        const std::filesystem::path& out) {
  std::error_code ec;
  for (const char* folder : {"", "keys", "alerts", "assets"}) {
    std::filesystem::create_directories(out / folder, ec);
    if (ec) {
      return core::fail(core::ErrorCode::IoError,
                        "cannot create " + (out / folder).string() + ": " + ec.message());
    }
  }
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
    KW_TRY(write(out / overview_file(page), render_overview(rows, query, nullptr, LinkMode::Static),
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
