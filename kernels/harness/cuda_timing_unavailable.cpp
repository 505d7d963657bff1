#include "kernels/detail/harness_cuda.hpp"

namespace kernelwatch::kernels::detail {

core::Result<Timings> time_cuda_case(Case&, const TimingPolicy&) {
  return core::fail(core::ErrorCode::Unavailable,
                    "cuda backend: kernelwatch was built without CUDA");
}

}  // namespace kernelwatch::kernels::detail

#include "kernels/detail/harness_device.hpp"

namespace kernelwatch::kernels::detail {

core::Result<GpuInfo> query_gpu(int) {
  return core::fail(core::ErrorCode::Unavailable,
                    "cuda backend: kernelwatch was built without CUDA");
}

core::Result<std::uint64_t> free_gpu_memory(int) {
  return core::fail(core::ErrorCode::Unavailable,
                    "cuda backend: kernelwatch was built without CUDA");
}

}  // namespace kernelwatch::kernels::detail
