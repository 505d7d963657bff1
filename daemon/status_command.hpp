// `kernelwatch status [--url URL]`: asks a running daemon's /api/v1/status and prints it as a
// readable table (or the JSON with --json). One HTTP/1.1 GET through Beast (plain HTTP: the
// status endpoint is served on loopback by default).
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/url.hpp"
#include "daemon/store_commands.hpp"

namespace kernelwatch::daemon {

struct StatusOptions {
  std::string url = "http://127.0.0.1:9477";
  OutputFormat format = OutputFormat::Table;
  int timeout_seconds = 10;
  bool all = false;    // list every key, not only those with a problem
  bool fleet = false;  // the fleet (/api/v1/fleet) instead of the daemon's own status
};

// The table `kernelwatch status` prints from a /api/v1/status answer: the daemon's lines, a
// summary of the keys' states, then the keys with a problem (firing, failing, a regression
// verdict waiting for its confirmation, acknowledged, inconclusive), worst first, grouped by
// environment; `all` lists the others after them. Lines fit `width` columns (labels are cut).
[[nodiscard]] std::string format_status(const nlohmann::json& status, bool all,
                                        std::size_t width = 120);

// The table `kernelwatch status --fleet` prints from a /api/v1/fleet answer: one line per host's
// schema of the shared PostgreSQL database, in the answer's order (problems first), with its
// open alerts under it; on a SQLite file, that it holds this host only.
[[nodiscard]] std::string format_fleet(const nlohmann::json& fleet);

int run_status(const StatusOptions& options, std::ostream& out, std::ostream& err);

// GET (or, with a body, a JSON POST) over plain HTTP/1.1 with Beast's parser (chunked, lengths and
// limits as the server reads them), a timeout before each step, an optional bearer token (never
// in a message). The answer's body when it is 200; else an error with the status and the start of
// the body. Any malformed answer is an error, never a crash.
[[nodiscard]] core::Result<std::string> http_exchange(const core::Url& url, std::string_view target,
                                                      std::chrono::seconds timeout,
                                                      const std::string* body = nullptr,
                                                      const std::string& bearer = {});

}  // namespace kernelwatch::daemon
