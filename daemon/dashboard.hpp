// The dashboard's routes on the daemon's HTTP listener: GET /, /keys/{ref}, /alerts/{id} and
// /assets/kw.css|kw.js, rendered by web/ from the store, the engine's key states and the
// daemon's status; and `kernelwatch report`, the same pages as files. Composition code.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <vector>

#include "daemon/api.hpp"
#include "daemon/http_server.hpp"

namespace kernelwatch::daemon {

// Public (read-only) routes, like the GET API.
[[nodiscard]] std::vector<Route> make_dashboard_routes(std::function<ApiContext()> context);

struct ReportOptions {
  std::filesystem::path db;
  std::filesystem::path out;
  std::filesystem::path config;  // its detector settings; empty: the defaults
};

// `kernelwatch report --db FILE --out DIR`: 0 written, 1 failed (message on err).
int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
