// One benchmark run of one kernel case, end to end: checks that the backend exists and the
// buffers fit, runs the correctness gate on a small problem through the same code path, times
// the case, samples the environment before and after, and returns the kernelindex record.
// Plain C++ over the registry; CUDA stays behind it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "kernels/harness/record.hpp"
#include "kernels/harness/timing.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels {

using CaseFactory =
    std::function<core::Result<std::unique_ptr<Case>>(const CaseId&, const CaseSpec&)>;

struct BenchRequest {
  CaseId id;
  CaseSpec spec;
  TimingPolicy policy;
  std::uint64_t seed = 1;
  int device = 0;  // CUDA device index
};

struct BenchOutcome {
  core::Record record;
  // The harness's statistics of its timings; absent when the run failed, and for a run of an
  // external runner (runners/), whose times are its record's alone.
  std::optional<Summary> summary;
  std::int64_t bytes_moved = 0;
  double achieved_gbps = 0;
  double peak_gbps = 0;  // 0 when the device's bandwidth is unknown
};

// Services a benchmark needs from its surroundings; tests replace the factory with a
// deliberately wrong kernel.
struct BenchContext {
  CaseFactory factory = create_case;
  std::function<core::Timestamp()> now;  // required: the wall clock of the caller
  // Told each phase as it begins ("checking correctness", "preparing inputs", "timing");
  // optional (the CLI prints progress with it).
  std::function<void(std::string_view phase)> on_phase;
};

// Errors (exit code 1 material): unknown backend on this machine, invalid shape, buffers larger
// than free memory (the message says how many bytes are needed), a case that cannot run at all.
// A wrong result is not an error: the outcome's record is `failed` with the reason, no timing.
[[nodiscard]] core::Result<BenchOutcome> run_benchmark(const BenchRequest& request,
                                                       const BenchContext& context);

// The record of a run of the case that failed before the harness reported one (the process that
// ran it on another GPU crashed, timed out, printed nothing): in the key a run of the case on
// `gpu` has (its hardware: `hardware` when given, the one an earlier run on that GPU named; else
// the GPU's name and compute capability; the CPU's on the CPU backend), with `status` and
// `reason`, observed at `observed_at`, nothing timed. Nothing runs and no device is touched.
[[nodiscard]] core::Record failed_record(const BenchRequest& request,
                                         const std::optional<GpuInfo>& gpu,
                                         const std::optional<core::Hardware>& hardware,
                                         core::RunStatus status, std::string reason,
                                         core::Timestamp observed_at);

// Bytes a case allocates, at least: every tensor it reads or writes once (bytes_moved), plus the
// flush buffer on its backend.
[[nodiscard]] std::uint64_t bytes_needed(const CaseId& id, const CaseSpec& spec,
                                         const TimingPolicy& policy);

// The small problem the gate checks: the same case and columns (so the same kernel variant), at
// most 8 rows.
[[nodiscard]] CaseSpec gate_spec(const CaseSpec& spec);

}  // namespace kernelwatch::kernels
