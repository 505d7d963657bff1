// Private to kernels/: the CUDA half of the timing protocol (events on the case's stream, an
// L2 flush with cudaMemsetAsync). Declared in plain C++; defined in harness/cuda_timing.cu, or
// as "not built with CUDA" in harness/cuda_timing_unavailable.cpp.
#pragma once

#include "core/error.hpp"
#include "kernels/harness/timing.hpp"

namespace kernelwatch::kernels::detail {

[[nodiscard]] core::Result<Timings> time_cuda_case(Case& c, const TimingPolicy& policy);

}  // namespace kernelwatch::kernels::detail
