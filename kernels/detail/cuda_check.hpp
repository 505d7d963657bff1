// Private to kernels/ (.cu files only): CUDA runtime calls wrapped once, so every failure
// becomes a core::Error with file, line and the call's text. May include cuda_runtime.h.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace kernelwatch::kernels::detail {

// OutOfMemory for cudaErrorMemoryAllocation, DeviceError otherwise; clears the runtime's
// last-error slot so a later check does not report the same failure again.
[[nodiscard]] tl::unexpected<core::Error> cuda_failure(cudaError_t status, const char* expression,
                                                       const char* file, int line);

}  // namespace kernelwatch::kernels::detail

// Returns the failure from the enclosing function (which returns a core::Status/Result).
#define KW_CUDA_TRY(expression)                                                                   \
  do {                                                                                            \
    const cudaError_t kw_cuda_status_ = (expression);                                             \
    if (kw_cuda_status_ != cudaSuccess) {                                                         \
      return ::kernelwatch::kernels::detail::cuda_failure(kw_cuda_status_, #expression, __FILE__, \
                                                          __LINE__);                              \
    }                                                                                             \
  } while (false)

// After a <<<...>>> launch: reports a bad configuration with the kernel's name.
#define KW_CUDA_CHECK_LAUNCH(kernel_name)                                 \
  do {                                                                    \
    const cudaError_t kw_cuda_status_ = cudaGetLastError();               \
    if (kw_cuda_status_ != cudaSuccess) {                                 \
      return ::kernelwatch::kernels::detail::cuda_failure(                \
          kw_cuda_status_, "launch of " kernel_name, __FILE__, __LINE__); \
    }                                                                     \
  } while (false)
