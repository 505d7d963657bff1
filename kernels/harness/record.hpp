// Turns one timed (or failed) run of a kernel case into a full kernelindex v1alpha1 record:
// run, protocol and environment, with workload, protocol, environment and implementation
// digests as core/key.hpp defines them. Plain C++ over core and the harness types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/record.hpp"
#include "kernels/harness/environment.hpp"
#include "kernels/harness/statistics.hpp"
#include "kernels/harness/timing.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels {

// sourceNative.source of the harness's runs (the daemon's own kernels, `kernelwatch bench`).
inline constexpr std::string_view kHarnessSource = "kernelwatch";

// What the CUDA runtime says about the device a case ran on.
struct GpuInfo {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-..."
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_bytes = 0;
  std::string driver_version;      // "570.86.15" (NVML) or the CUDA driver API version
  std::string runtime_version;     // "13.0"
  double peak_bandwidth_gbps = 0;  // from memory clock and bus width; 0 when unknown
};

// Identifies the build that ran the kernels; embedded at build time.
struct BuildInfo {
  std::string version;        // "0.1.0"
  std::string git_commit;     // "" outside a git checkout
  std::string source_digest;  // sha256 over the kernel's own and the shared kernel sources
};

// The build this binary was made from, with `kernel`'s source digest (generated header, see
// cmake/build_info.cmake and docs/KERNELS.md).
[[nodiscard]] BuildInfo current_build(KernelRef kernel);

struct RunContext {
  CaseId id;
  CaseSpec spec;
  TimingPolicy policy;
  core::RunStatus status = core::RunStatus::Passed;
  std::string reason;              // why the run is failed or inconclusive
  std::optional<Timings> timings;  // absent on a failed run
  std::size_t flush_bytes = 0;
  core::Timestamp observed_at{};
  CpuInfo cpu;
  std::optional<GpuInfo> gpu;  // CUDA cases
  // The hardware the environment names when it is known otherwise (a failed run recorded on the
  // GPU an earlier run of the case reported); absent: from `gpu`, else the CPU.
  std::optional<core::Hardware> hardware;
  GpuSample before;
  GpuSample after;
  BuildInfo build;
};

// Achieved bandwidth in GB/s (1e9 bytes per second) of moving `bytes` in `ns`.
[[nodiscard]] double achieved_gbps(std::int64_t bytes, double ns);

[[nodiscard]] core::Record make_record(const RunContext& context);

}  // namespace kernelwatch::kernels
