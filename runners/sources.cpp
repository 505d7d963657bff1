#include "runners/sources.hpp"

#include "runners/command.hpp"
#include "runners/liger_bench.hpp"
#include "runners/liger_scripts.hpp"
#include "runners/producer.hpp"

namespace kernelwatch::runners {
namespace {

// One line per source.
constexpr RunSource kSources[] = {
    kHarnessRunSource,
    kLigerBenchRunSource,
    kCommandRunSource,
    kLigerScriptsRunSource,
};

}  // namespace

std::span<const RunSource> run_sources() noexcept {
  return kSources;
}

const RunSource* find_run_source(std::string_view source) noexcept {
  for (const RunSource& s : kSources) {
    if (s.source == source) return &s;
  }
  return nullptr;
}

}  // namespace kernelwatch::runners
