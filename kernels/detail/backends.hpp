// Private to kernels/: how registry.cpp reaches each backend's Case factory. The CUDA one is
// defined in cuda_case.cu, or in cuda_unavailable.cpp when the library is built without nvcc.
// Plain C++ and core/ only.
#pragma once

#include <memory>

#include "core/error.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels::detail {

// spec is already validated for id.kernel.
[[nodiscard]] core::Result<std::unique_ptr<Case>> create_cpu_case(const CaseId& id,
                                                                  const CaseSpec& spec);
[[nodiscard]] core::Result<std::unique_ptr<Case>> create_cuda_case(const CaseId& id,
                                                                   const CaseSpec& spec);
[[nodiscard]] core::Status cuda_available();

}  // namespace kernelwatch::kernels::detail
