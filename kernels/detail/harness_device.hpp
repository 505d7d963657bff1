// Private to kernels/: what the harness asks the CUDA runtime (device properties, free memory),
// declared in plain C++. Defined in harness/cuda_device.cu, or as "not built with CUDA" in
// harness/cuda_timing_unavailable.cpp.
#pragma once

#include <cstdint>

#include "core/error.hpp"
#include "kernels/harness/record.hpp"

namespace kernelwatch::kernels::detail {

[[nodiscard]] core::Result<GpuInfo> query_gpu(int device);
[[nodiscard]] core::Result<std::uint64_t> free_gpu_memory(int device);

}  // namespace kernelwatch::kernels::detail
