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

  const auto rows = KW_TRY(key_rows_from_replay(store, options));
  summary.keys = rows.size();
  const std::size_t pages =
      std::max<std::size_t>(1, (rows.size() + kOverviewPageSize - 1) / kOverviewPageSize);
  for (std::size_t page = 1; page <= pages; ++page) {
    OverviewQuery query;
    query.page = page;
    KW_TRY(write(out / overview_file(page), render_overview(rows, query, nullptr, LinkMode::Static),
                 summary.files));
  }

  // Stored alerts by key; each key's page, then its alerts' pages (stored and replayed).
  const auto stored = KW_TRY(storage::AlertStore(store).list(std::nullopt, 0));
  std::map<std::int64_t, std::vector<storage::AlertRow>> stored_by_key;
  for (const auto& row : stored) {
    if (row.key_id) stored_by_key[*row.key_id].push_back(row);
  }
  std::set<std::string> written;
  for (const auto& row : rows) {
    auto replay = KW_TRY(replay_key_id(store, row.key_id, options));
    const auto& key_stored = stored_by_key[row.key_id];
    for (const auto scale : {Scale::Linear, Scale::Log}) {
      KeyQuery query;
      query.scale = scale;
      KW_TRY(write(out / key_file(key_ref(replay.key), scale),
                   render_key(replay, key_stored, query, LinkMode::Static), summary.files));
    }
    std::vector<std::string> ids;
    for (const auto& alert : replay.alerts) ids.push_back(alert_page_id(alert));
    for (const auto& s : key_stored) ids.push_back(alert_page_id(s.alert));
    for (const auto& id : ids) {
      if (!written.insert(id).second) continue;
      const auto view = KW_TRY(find_alert(store, id, options));
      if (!view) continue;
      KW_TRY(write(out / alert_file(id), render_alert(*view, LinkMode::Static), summary.files));
      ++summary.alerts;
    }
  }
  return summary;
}

}  // namespace kernelwatch::web
