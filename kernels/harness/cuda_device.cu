// Device properties and free memory from the CUDA runtime, for the run record and the
// before-allocation memory check.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "kernels/detail/cuda_check.hpp"
#include "kernels/detail/harness_device.hpp"

namespace kernelwatch::kernels::detail {
namespace {

std::string format_uuid(const cudaUUID_t& uuid) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9) out += '-';
  }
  return out;
}

std::string format_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace

core::Result<GpuInfo> query_gpu(int device) {
  cudaDeviceProp props{};
  KW_CUDA_TRY(cudaGetDeviceProperties(&props, device));
  GpuInfo info;
  info.index = device;
  info.name = props.name;
  info.uuid = format_uuid(props.uuid);
  info.compute_major = props.major;
  info.compute_minor = props.minor;
  info.sm_count = props.multiProcessorCount;
  info.memory_bytes = props.totalGlobalMem;
  info.l2_bytes = static_cast<std::uint64_t>(props.l2CacheSize);
  int driver = 0;
  int runtime = 0;
  KW_CUDA_TRY(cudaDriverGetVersion(&driver));
  KW_CUDA_TRY(cudaRuntimeGetVersion(&runtime));
  info.driver_version = "cuda-driver-api " + format_version(driver);
  info.runtime_version = format_version(runtime);
  int clock_khz = 0;
  int bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess) {
    // Double data rate: two transfers per clock over the bus width.
    info.peak_bandwidth_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  }
  (void)cudaGetLastError();
  return info;
}

core::Result<std::uint64_t> free_gpu_memory(int device) {
  KW_CUDA_TRY(cudaSetDevice(device));
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  KW_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<std::uint64_t>(free_bytes);
}

}  // namespace kernelwatch::kernels::detail
