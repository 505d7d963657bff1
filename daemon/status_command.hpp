// `kernelwatch status [--url URL]`: asks a running daemon's /api/v1/status and prints it as a
// readable table (or the JSON with --json). One HTTP/1.1 GET through Beast (plain HTTP: the
// status endpoint is served on loopback by default).
#pragma once

#include <iosfwd>
#include <string>

#include "daemon/store_commands.hpp"

namespace kernelwatch::daemon {

struct StatusOptions {
  std::string url = "http://127.0.0.1:9477";
  OutputFormat format = OutputFormat::Table;
  int timeout_seconds = 10;
};

int run_status(const StatusOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
