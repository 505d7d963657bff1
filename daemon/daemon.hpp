// `kernelwatch daemon`: the composition root. One io_context owns signals, timers, the HTTP
// server and the delivery worker; benchmarks run on a dedicated thread so the server always
// answers; every SQLite write happens on the io_context thread.
#pragma once

#include <filesystem>

namespace kernelwatch::daemon {

struct DaemonOptions {
  std::filesystem::path config;
};

// Runs until SIGTERM or SIGINT; returns the process exit code (0 on a clean stop, 1 when it
// could not start: bad config, database, address in use).
int run_daemon(const DaemonOptions& options);

}  // namespace kernelwatch::daemon
