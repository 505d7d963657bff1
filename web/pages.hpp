// The dashboard's pages as HTML strings: the overview, a key's history chart and run table, an
// alert, and the 400/404 pages; plus the stylesheet and script they load. Served by the daemon
// and written by `kernelwatch report`; charts are inline SVG drawn here, the script only adds
// tooltips on focus, filter submission and the acknowledge form. Pure; core, storage types,
// detectors types and web/model.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "storage/fleet.hpp"
#include "storage/outbox.hpp"
#include "web/model.hpp"

namespace kernelwatch::web {

// Served: absolute links to the daemon's routes ("/keys/<ref>"). Static: relative links between
// files of a folder ("keys/<ref>.html"), controls that need the daemon left out.
enum class LinkMode { Served, Static };

struct Page {
  unsigned status = 200;
  std::string html;
};

using Query = std::map<std::string, std::string>;

// ---- overview ----

// A config entry of the daemon: when it ran, when it runs next, its newest error.
struct EntryStatus {
  std::string name;
  std::string runner;
  std::optional<core::Timestamp> last_run;
  std::optional<core::Timestamp> next_run;
  std::string last_error;  // "" none
};

struct DaemonStatus {
  std::vector<EntryStatus> entries;
  std::string version;
  std::string backend;
  bool cycle_running = false;
  std::uint64_t cycles = 0;
  std::uint64_t cycle_errors = 0;
  std::optional<core::Timestamp> last_cycle_end;
  std::optional<core::Timestamp> next_cycle;  // nullopt: no benchmarks scheduled
  std::vector<storage::OutboxCounts> outbox;
  std::int64_t dead_letters = 0;
};

struct OverviewQuery {
  std::string environment;  // "" = all
  std::string benchmark;
  std::string provider;
  std::optional<KeyState> state;
  std::size_t page = 1;  // 1-based
};

// InvalidArgument naming the parameter for an unknown name or a malformed value.
[[nodiscard]] core::Result<OverviewQuery> parse_overview_query(const Query& query);

inline constexpr std::size_t kOverviewPageSize = 100;

// `rows` in any order; `status` is the daemon's own (nullptr in a static export).
// `page_file(n)` names page n in static mode ("index.html", "index-2.html"). `placed`: the hosts'
// and GPUs' rows (placed_rows), shown on the first page as "Hosts and GPUs" when runs name a GPU
// or more than one host.
[[nodiscard]] std::string render_overview(const std::vector<KeyRow>& rows,
                                          const OverviewQuery& query, const DaemonStatus* status,
                                          LinkMode mode, const std::vector<PlacedRow>& placed = {});
[[nodiscard]] std::string overview_file(std::size_t page);

// ---- fleet page ----

// Every host of a fleet's PostgreSQL database (`database`: where, no password), as
// storage::fleet_hosts ordered them; with `postgresql` false, what a SQLite file holds instead.
[[nodiscard]] std::string render_fleet(const std::vector<storage::FleetHost>& hosts,
                                       std::string_view database, bool postgresql);

// ---- key page ----

enum class Scale { Linear, Log };

struct KeyQuery {
  std::optional<core::Timestamp> from;  // inclusive, from=YYYY-MM-DD or RFC 3339
  std::optional<core::Timestamp> to;    // exclusive end of the day / instant
  std::size_t last = 400;               // newest N runs of the range on the chart; 0 = all
  Scale scale = Scale::Linear;
  std::size_t rows_page = 1;  // the run table's page (100 runs each)
};

[[nodiscard]] core::Result<KeyQuery> parse_key_query(const Query& query);

inline constexpr std::size_t kTableRows = 100;

// `stored`: the key's alerts as the daemon stored them (newest first), shown beside the
// replay's.
[[nodiscard]] std::string render_key(const KeyReplay& replay,
                                     const std::vector<storage::AlertRow>& stored,
                                     const KeyQuery& query, LinkMode mode);

// ---- alert page ----

[[nodiscard]] std::string render_alert(const AlertView& view, LinkMode mode);

// ---- errors and assets ----

[[nodiscard]] Page not_found_page(std::string_view what, LinkMode mode);
[[nodiscard]] Page bad_request_page(std::string_view message, LinkMode mode);

// The file names under assets/ and their content.
[[nodiscard]] std::string_view stylesheet();
[[nodiscard]] std::string_view script();

// Links: the key page, the alert page and the overview, relative to a page at `depth` folders
// below the root in static mode (0: index.html, 1: keys/..., alerts/...).
[[nodiscard]] std::string key_href(std::string_view ref, LinkMode mode, int depth,
                                   Scale scale = Scale::Linear);
[[nodiscard]] std::string alert_href(std::string_view alert_id, LinkMode mode, int depth);
// The static export's file name for an alert page ("alerts/<16 hex>.html").
[[nodiscard]] std::string alert_file(std::string_view alert_id);
[[nodiscard]] std::string key_file(std::string_view ref, Scale scale);

}  // namespace kernelwatch::web
