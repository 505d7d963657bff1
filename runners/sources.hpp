// The catalogue of run sources: every source of runs that kernelwatch itself produces, known by
// the sourceNative.source its runs carry, and what each declares about its runs. A source
// declares itself next to its code (a RunSource constant in its header) and is registered with
// one line in sources.cpp; whoever needs to know what a source's runs are (the daemon's engine:
// can the next run of its key confirm a breach?) asks here, never matches source names itself.
// Level 2: core/, kernels/ (the harness's source).
#pragma once

#include <span>
#include <string_view>

namespace kernelwatch::runners {

struct RunSource {
  std::string_view source;  // sourceNative.source of its runs: "kernelwatch-liger-bench"
  std::string_view runner;  // the `runner` of its config entries ("" kernelwatch's own kernels)
  // The daemon produces this source's runs and produces the next run of the same key (a rerun at
  // once or the entry's next scheduled run), so a run that breaches its band waits for that run
  // to confirm it (detectors::ConfirmPolicy::Next, when the config's confirm_reruns > 0).
  bool confirmed_by_next_run = true;
};

// Every registered source, in registration order.
[[nodiscard]] std::span<const RunSource> run_sources() noexcept;
// The registered source whose runs carry `source`; nullptr for a run kernelwatch did not produce
// (imported, posted by another tool).
[[nodiscard]] const RunSource* find_run_source(std::string_view source) noexcept;

}  // namespace kernelwatch::runners
