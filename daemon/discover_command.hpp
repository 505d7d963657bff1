// `kernelwatch discover --config FILE [--entry NAME]`: runs each benchmark-program entry of a
// config once, as the daemon would (same argv, environment, format and GPU probe), stores
// nothing, and prints the keys its runs fall in with the history each already has in the
// config's database. The first step with a new benchmark: see its keys before the daemon
// watches them. `--list` runs nothing: it asks the harness for its cases (Google Benchmark's
// --benchmark_list_tests, pytest's --collect-only) and shows each with the history stored for its
// benchmark, provider, workload and this host.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "daemon/store_commands.hpp"

namespace kernelwatch::daemon {

struct DiscoverOptions {
  std::filesystem::path config;
  std::string entry;  // "": every command, liger-bench and liger-scripts entry
  // Only list the cases, running nothing, where the harness can (Google Benchmark, pytest).
  bool list = false;
  OutputFormat format = OutputFormat::Table;
};

// 0 when every entry run produced its runs (passed or not: a failed run is shown with its
// reason), 1 when the config cannot be read, names no such entry, or an entry cannot run at all.
// With `list`: 1 also when an entry's harness cannot list its cases (it says the entry must run)
// or its listing failed.
int run_discover(const DiscoverOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
