// The config entry of the liger-bench source (`"runner": "liger-bench"`, docs/CONFIG.md), kept
// with the runner it configures: its reader (kernel, pass, workloads, providers, python, script,
// timeout, gpus; config/ hands it the entry's JSON, how durations, paths and values in messages
// are written there, and its reader of workloads), its logged form, and its producers for a
// cycle, one per case and GPU (runners/source_entry.hpp). Level 2: core/ (JsonField).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "runners/gpus.hpp"
#include "runners/liger_bench.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::runners {

struct LigerBenchSettings {
  std::vector<LigerProvider> providers;  // required, each one liger-bench runs for the kernel
  LigerBenchOptions options;             // python (required), script, timeout
};

// The entry's providers and how it runs. Errors name the field.
[[nodiscard]] core::Result<LigerBenchSettings> read_liger_bench_entry(
    const core::JsonField& object, kernels::KernelRef kernel, const EntryReaderServices& services);

// Whether liger-bench runs `workload` for each of the entry's providers (its cases:
// liger_cases()); InvalidArgument says why not.
[[nodiscard]] core::Status check_liger_workload(kernels::KernelRef kernel, core::Pass pass,
                                                const std::vector<LigerProvider>& providers,
                                                const core::Workload& workload);

// The runner's fields of the effective entry for the logged config.
[[nodiscard]] nlohmann::json liger_bench_entry_json(const std::vector<LigerProvider>& providers,
                                                    const LigerBenchOptions& options);

// A liger-bench entry of the config: a kernel's pass, each provider on each workload (its
// cases: liger_cases()), on the GPUs it selects (`gpus`, default every GPU of the host).
class LigerBenchSource final : public SourceEntry {
 public:
  [[nodiscard]] std::string_view runner() const override { return kLigerBenchRunner; }
  // "liger-bench tvd/backward"
  [[nodiscard]] std::string name() const override;
  // "tvd/backward is already listed in benchmarks[0]"
  [[nodiscard]] core::Status name_taken(const core::JsonField& object, const std::string& earlier,
                                        const EntryReaderServices& services) const override;
  [[nodiscard]] nlohmann::json to_json(const DurationText& duration) const override;
  // One producer per case, each on every selected GPU at once.
  [[nodiscard]] std::vector<std::shared_ptr<RunProducer>> producers(CycleHost& host) const override;

  kernels::KernelRef kernel = kernels::KernelRef("tvd");  // one of kLigerBenchKernels
  core::Pass pass = core::Pass::Forward;
  std::vector<core::Workload> workloads;  // each one liger-bench runs for every provider
  std::vector<LigerProvider> providers;   // required
  LigerBenchOptions options;              // python (required), script, timeout (default 10m)
  GpuSelection gpus;
};

[[nodiscard]] core::Result<std::shared_ptr<const SourceEntry>> read_liger_bench_source(
    const core::JsonField& object, const EntryReaderServices& services);

// The liger-bench source in the catalogue of run sources (runners/sources.hpp): the daemon's own
// runs (a breach is confirmed by a rerun).
inline constexpr RunSource kLigerBenchRunSource{.source = kLigerBenchSource,
                                                .runner = kLigerBenchRunner,
                                                .gpus = true,
                                                .read = read_liger_bench_source};

}  // namespace kernelwatch::runners
