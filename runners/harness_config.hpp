// The config entry of kernelwatch's own kernels (an entry without `runner`, docs/CONFIG.md), one
// run source of the catalogue like the others: its reader (kernel, pass, providers, workloads,
// gpus), its logged form and its producers for a cycle (one per case, in this process or a child
// per GPU: runners/harness_child.hpp); discover passes it by. Level 2: core/ (JsonField), kernels/
// (the catalogue of kernels and the harness), this module's runners.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/names.hpp"
#include "kernels/harness/record.hpp"
#include "kernels/registry.hpp"
#include "runners/gpus.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::runners {

// An entry of kernelwatch's own kernels: a kernel's pass, each provider on each workload (its
// cases: harness_cases()), timed by the harness as the config's `bench` section says, on the
// backend and GPUs the daemon runs its kernels on (RunnerServices::harness).
class HarnessSource final : public SourceEntry {
 public:
  // "": its entries have no `runner`.
  [[nodiscard]] std::string_view runner() const override { return {}; }
  // "harness": the in-process measurement harness (or its child per GPU).
  [[nodiscard]] std::string_view runner_shown() const override { return "harness"; }
  // "tvd/backward"
  [[nodiscard]] std::string name() const override;
  // "tvd/backward is already listed in benchmarks[0]"
  [[nodiscard]] core::Status name_taken(const core::JsonField& object, const std::string& earlier,
                                        const EntryReaderServices& services) const override;
  [[nodiscard]] nlohmann::json to_json(const DurationText& duration) const override;
  // One producer per case (providers outer), each in this process or on each selected GPU.
  [[nodiscard]] std::vector<std::shared_ptr<RunProducer>> producers(CycleHost& host) const override;
  // Its keys are its config's cases (`kernelwatch bench` runs one): discover passes it by.
  [[nodiscard]] std::optional<std::string> not_discovered() const override;

  kernels::KernelRef kernel = kernels::KernelRef("layer_norm");  // of kernels/catalogue.hpp
  core::Pass pass = core::Pass::Forward;
  std::vector<core::Provider> providers;  // default both, fused first
  std::vector<core::Workload> workloads;  // at least one, each of `kernel` (its descriptor's form)
  // `gpus`: the GPUs its cases run on, each in a child; absent: every GPU of a multi-GPU host.
  GpuSelection gpus;
};

// Every field of the entry (`runner` absent); errors name the field.
[[nodiscard]] core::Result<std::shared_ptr<const SourceEntry>> read_harness_source(
    const core::JsonField& object, const EntryReaderServices& services);

// kernelwatch's own kernels in the catalogue of run sources (runners/sources.hpp): the daemon's
// own runs (a breach is confirmed by a rerun); the source of entries without `runner`.
inline constexpr RunSource kHarnessRunSource{
    .source = kernels::kHarnessSource, .runner = "", .gpus = true, .read = read_harness_source};

}  // namespace kernelwatch::runners
