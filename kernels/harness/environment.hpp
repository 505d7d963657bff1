// The environment a run was measured in: the host CPU, and for a GPU what NVML reports (loaded
// with dlopen at run time, so there is no build dependency; every field is empty without it).
// Plain C++; the CUDA-side device properties come from the kernels' CUDA backend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/record.hpp"

namespace kernelwatch::kernels {

struct CpuInfo {
  std::string vendor;        // "intel", "amd", "arm", ... ("" when unknown)
  std::string model;         // "Intel(R) Xeon(R) Platinum 8480+"
  std::string architecture;  // "x86_64", "aarch64"
  unsigned logical_cores = 0;
  std::uint64_t memory_bytes = 0;
};

// Reads /proc/cpuinfo, /proc/meminfo and uname; missing files leave fields empty.
[[nodiscard]] CpuInfo probe_cpu();

// The kernelindex hardware identity of a CPU: vendor, product (the model without "(R)", "(TM)",
// "CPU" and the "@ 2.00GHz" suffix), architecture.
[[nodiscard]] core::Hardware cpu_hardware(const CpuInfo& cpu);

// One NVML reading of one GPU. Every field is optional: NVML may be absent or refuse a query.
struct GpuSample {
  std::optional<unsigned> sm_clock_mhz;
  std::optional<unsigned> sm_clock_max_mhz;
  std::optional<unsigned> memory_clock_mhz;
  std::optional<unsigned> memory_clock_max_mhz;
  std::optional<std::uint64_t> clock_event_reasons;  // NVML clocks-event (throttle) bit mask
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<bool> persistence_mode;
  std::optional<unsigned> other_compute_processes;  // compute processes other than this one
};

// A GPU as NVML names it: what the daemon probes for programs it does not link (runners/).
struct NvmlIdentity {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int compute_major = 0;
  int compute_minor = 0;
  std::uint64_t memory_bytes = 0;
};

// One GPU as NVML enumerates it: its index, UUID and PCIe bus id beside its identity.
struct NvmlDeviceInfo {
  unsigned index = 0;
  std::string uuid;        // "GPU-8c3a..." ("" when NVML refuses)
  std::string pci_bus_id;  // "00000000:19:00.0"
  NvmlIdentity identity;
};

class Nvml {
 public:
  // Loads libnvidia-ml.so.1 and initializes it; unavailable() explains why not.
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  [[nodiscard]] bool available() const { return handle_ != nullptr; }
  [[nodiscard]] const std::string& unavailable_reason() const { return reason_; }
  [[nodiscard]] std::string driver_version() const;
  // The GPU of this index; nullopt when NVML cannot name it.
  [[nodiscard]] std::optional<NvmlIdentity> identity(unsigned index) const;
  // Every GPU NVML sees, by index (empty without NVML).
  [[nodiscard]] std::vector<NvmlDeviceInfo> devices() const;
  // The GPU by its UUID as CUDA reports it ("GPU-8c3a..."), else by index. Compute processes
  // in `ours` (a benchmark child this process started) count as this process, not as others.
  [[nodiscard]] GpuSample sample(const std::string& uuid, unsigned index,
                                 const std::vector<unsigned>& ours = {}) const;

 private:
  void* library_ = nullptr;
  void* handle_ = nullptr;  // non-null once nvmlInit succeeded
  std::string reason_;
};

// The sample as run metrics named "<what>_<when>" ("sm_clock_mhz_before", "power_w_after"; a
// boolean as 0 or 1), the form a BenchmarkRun's sourceNative.metrics takes: what a GPU did during
// one run belongs to the run, not to its environment.
void add_sample_metrics(const GpuSample& sample, std::string_view when, nlohmann::json& metrics);

// Why a run cannot stand as a measurement, from samples before and after it: the SM clock under
// 75% of its maximum, or another compute process on the GPU. Empty when neither happened.
[[nodiscard]] std::string inconclusive_reason(const GpuSample& before, const GpuSample& after);

}  // namespace kernelwatch::kernels
