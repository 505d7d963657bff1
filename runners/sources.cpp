#include "runners/sources.hpp"

#include "runners/command_config.hpp"
#include "runners/harness_config.hpp"
#include "runners/liger_bench_config.hpp"
#include "runners/liger_scripts_config.hpp"

namespace kernelwatch::runners {
namespace {

// One line per source; the order is that of the runners in messages ("known: ...").
constexpr RunSource kSources[] = {
    kHarnessRunSource,
    kLigerBenchRunSource,
    kLigerScriptsRunSource,
    kCommandRunSource,
};

}  // namespace

const RunSource* SourceCatalogue::find_source(std::string_view source) const noexcept {
  for (const RunSource& s : sources_) {
    if (s.source == source) return &s;
  }
  return nullptr;
}

const RunSource* SourceCatalogue::find_runner(std::string_view runner) const noexcept {
  for (const RunSource& s : sources_) {
    if (s.runner == runner && s.read != nullptr) return &s;
  }
  return nullptr;
}

std::vector<std::string_view> SourceCatalogue::runners(bool gpus_only) const {
  std::vector<std::string_view> out;
  for (const RunSource& s : sources_) {
    if (s.read != nullptr && !s.runner.empty() && (s.gpus || !gpus_only)) {
      out.push_back(s.runner);
    }
  }
  return out;
}

std::string join_names(const std::vector<std::string_view>& names, std::string_view separator,
                       std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += (i + 1 == names.size() && !last.empty()) ? last : separator;
    out += names[i];
  }
  return out;
}

const SourceCatalogue& source_catalogue() noexcept {
  static const SourceCatalogue catalogue(kSources);
  return catalogue;
}

std::span<const RunSource> run_sources() noexcept {
  return kSources;
}

const RunSource* find_run_source(std::string_view source) noexcept {
  return source_catalogue().find_source(source);
}

}  // namespace kernelwatch::runners
