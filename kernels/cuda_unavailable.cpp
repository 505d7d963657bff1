// The CUDA backend of a library built without nvcc: every request says so.
#include "kernels/detail/backends.hpp"

namespace kernelwatch::kernels::detail {

core::Status cuda_available() {
  return core::fail(core::ErrorCode::Unavailable,
                    "cuda backend: kernelwatch was not built with CUDA (nvcc was not found or "
                    "KERNELWATCH_ENABLE_CUDA is OFF)");
}

core::Result<std::unique_ptr<Case>> create_cuda_case(const CaseId&, const CaseSpec&) {
  return tl::unexpected(cuda_available().error());
}

}  // namespace kernelwatch::kernels::detail
