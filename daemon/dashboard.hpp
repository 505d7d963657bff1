// The dashboard's routes on the daemon's HTTP listener: GET /, /keys/{ref}, /alerts/{id} and
// /assets/kw.css|kw.js, rendered by web/ from the store, the engine's key states and the
// daemon's status; and `kernelwatch report`, the same pages as files. Composition code.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <vector>

#include "daemon/api.hpp"
#include "daemon/key_pages.hpp"
#include "http/http_server.hpp"

namespace kernelwatch::daemon {

// Where the key and alert pages are made: a thread of their own (`context`) with a read-only
// connection of its own to the daemon's database (`store`, used on that thread only), so that
// replaying and rendering a long history never holds up the engine's thread; the detector
// settings they replay with (thread-safe: SIGHUP changes them); and the rendered key pages,
// which the HTTP thread answers while their key has not changed.
struct DashboardPages {
  boost::asio::io_context* context = nullptr;
  storage::Connection* store = nullptr;
  std::function<EngineOptions()> engine_options;
  KeyPages* key_pages = nullptr;
};

// Public (read-only) routes, like the GET API. The overview reads the engine (its thread).
[[nodiscard]] std::vector<Route> make_dashboard_routes(std::function<ApiContext()> context,
                                                       DashboardPages pages);

struct ReportOptions {
  std::filesystem::path db;
  std::filesystem::path out;
  std::filesystem::path config;  // its detector settings; empty: the defaults
};

// `kernelwatch report --db FILE --out DIR`: 0 written, 1 failed (message on err).
int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
