// `kernelwatch discover --config FILE [--entry NAME]`: runs each benchmark-program entry of a
// config once, as the daemon would (same argv, environment, format and GPU probe), stores
// nothing, and prints the keys its runs fall in with the history each already has in the
// config's database. The first step with a new benchmark: see its keys before the daemon
// watches them.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "daemon/store_commands.hpp"

namespace kernelwatch::daemon {

struct DiscoverOptions {
  std::filesystem::path config;
  std::string entry;  // "": every command and liger-bench entry
  OutputFormat format = OutputFormat::Table;
};

// 0 when every entry run produced its runs (passed or not: a failed run is shown with its
// reason), 1 when the config cannot be read, names no such entry, or an entry cannot run at all.
int run_discover(const DiscoverOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
