// Fuzz target: the config loader (start and SIGHUP). No environment variables are set and
// relative paths resolve under a directory that does not exist, so secret files are never read.
#include <string>

#include "config/config.hpp"
#include "config/environment.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kernelwatch;
  static const config::Environment environment = config::Environment::from_map({});
  const auto loaded = config::parse_config(fuzz::text_of(data, size), "fuzz.json", environment,
                                           "/nonexistent/kernelwatch-fuzz");
  if (loaded) {
    // What the daemon logs at start: the redacted config must always print.
    const std::string printed = config::redacted_json(*loaded).dump();
    if (printed.empty()) fuzz::invariant_failed("an accepted config prints as nothing");
  }
  return 0;
}
