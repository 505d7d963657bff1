// The config reader of a `"runner": "liger-bench"` entry's own fields (docs/CONFIG.md): its
// providers, python, script and timeout, kept with the runner it configures. config/ reads what
// every entry of a kernel has (kernel, pass, workloads, interval, gpus) and hands this the entry's
// JSON and how durations, paths and values in messages are written there
// (runners/command_config.hpp). Level 2: core/ (JsonField).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "runners/command_config.hpp"
#include "runners/liger_bench.hpp"

namespace kernelwatch::runners {

struct LigerBenchSettings {
  std::vector<LigerProvider> providers;  // required, each one liger-bench runs for the kernel
  LigerBenchOptions options;             // python (required), script, timeout
};

// The entry's providers and how it runs. Errors name the field.
[[nodiscard]] core::Result<LigerBenchSettings> read_liger_bench_entry(
    const core::JsonField& object, core::Kernel kernel, const EntryReaderServices& services);

// Whether liger-bench runs `workload` for each of the entry's providers (its cases:
// liger_cases()); InvalidArgument says why not.
[[nodiscard]] core::Status check_liger_workload(core::Kernel kernel, core::Pass pass,
                                                const std::vector<LigerProvider>& providers,
                                                const core::Workload& workload);

// The runner's fields of the effective entry for the logged config.
[[nodiscard]] nlohmann::json liger_bench_entry_json(const std::vector<LigerProvider>& providers,
                                                    const LigerBenchOptions& options);

}  // namespace kernelwatch::runners
