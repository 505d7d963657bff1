// The catalogue of run sources: every source of runs that kernelwatch itself produces, known by
// the sourceNative.source its runs carry, and what each declares about its runs and its config
// entries. A source declares itself next to its code (a RunSource constant in its header, with the
// reader of its config entries) and is registered with one line in sources.cpp; whoever needs to
// know what a source's runs are (the daemon's engine: can the next run of its key confirm a
// breach?) or how its entries are read (the config loader, by `runner`) asks here, never matches
// source or runner names itself. An entry read is a SourceEntry (runners/source_entry.hpp): the
// schedule, the status and discover take its name, logged form and producers from it.
// Level 2: core/, kernels/ (the harness's source).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace kernelwatch::runners {

class SourceEntry;
struct EntryReaderServices;

// A source's reader of its config entries: every field of the entry (`object`, whose `runner` names
// the source, or has none: kernelwatch's own kernels) but `interval` (the schedule's, read by the
// config loader for every entry), `gpus` included where it applies. Errors name the field
// ("benchmarks[2].output: ...").
using EntryReader = core::Result<std::shared_ptr<const SourceEntry>> (*)(
    const core::JsonField& object, const EntryReaderServices& services);

struct RunSource {
  std::string_view source = {};  // sourceNative.source of its runs: "kernelwatch-liger-bench"
  std::string_view runner =
      {};  // the `runner` of its config entries ("" kernelwatch's own kernels)
  // The daemon produces this source's runs and produces the next run of the same key (a rerun at
  // once or the entry's next scheduled run), so a run that breaches its band waits for that run
  // to confirm it (detectors::ConfirmPolicy::Next, when the config's confirm_reruns > 0).
  bool confirmed_by_next_run = true;
  // `gpus` applies to its entries: one process per selected GPU. Else `no_gpus` says where its
  // entries run instead ("a liger-scripts entry runs where its scripts' own device choice puts it
  // (...)"), after the config's "applies to command and liger-bench entries; ".
  bool gpus = false;
  std::string_view no_gpus = {};
  // Its entries' reader (kernelwatch's own kernels: of the entries without `runner`); nullptr
  // for a source whose runs the daemon produces from no config entry of its own.
  EntryReader read = nullptr;
};

// A catalogue of sources, in registration order. The daemon has one (source_catalogue()); a test
// builds its own to register a source of its own.
class SourceCatalogue {
 public:
  explicit SourceCatalogue(std::span<const RunSource> sources) : sources_(sources) {}
  [[nodiscard]] std::span<const RunSource> sources() const noexcept { return sources_; }
  // The source whose runs carry `source`; nullptr for a run kernelwatch did not produce.
  [[nodiscard]] const RunSource* find_source(std::string_view source) const noexcept;
  // The source whose config entries have this `runner`; "" finds kernelwatch's own kernels
  // (entries without `runner`), where registered. nullptr for an unknown runner.
  [[nodiscard]] const RunSource* find_runner(std::string_view runner) const noexcept;
  // The runners of its entries in registration order (liger-bench, liger-scripts, command; not
  // kernelwatch's own kernels, which have none); `gpus_only`: only those `gpus` applies to.
  [[nodiscard]] std::vector<std::string_view> runners(bool gpus_only = false) const;

 private:
  std::span<const RunSource> sources_;
};

// "a, b or c" for join_names(names, ", ", " or "); "a, b" for join_names(names, ", ").
[[nodiscard]] std::string join_names(const std::vector<std::string_view>& names,
                                     std::string_view separator, std::string_view last = {});

// The catalogue of sources.cpp: every source kernelwatch produces.
[[nodiscard]] const SourceCatalogue& source_catalogue() noexcept;
// Every registered source, in registration order.
[[nodiscard]] std::span<const RunSource> run_sources() noexcept;
// The registered source whose runs carry `source`; nullptr for a run kernelwatch did not produce
// (imported, posted by another tool).
[[nodiscard]] const RunSource* find_run_source(std::string_view source) noexcept;

}  // namespace kernelwatch::runners
