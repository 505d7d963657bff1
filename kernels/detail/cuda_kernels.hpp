// Private to kernels/ (.cu files only): the CUDA entry points behind the CUDA Case, one per
// (kernel, pass); arguments are device TensorRefs already validated. Launches are asynchronous
// on `stream`. May include cuda_runtime.h.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/tvd.hpp"

namespace kernelwatch::kernels::detail {

struct DeviceWorkspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// sm_count fixes the fused backward's block count (and so its reduction order) per device.
[[nodiscard]] std::size_t layer_norm_backward_cuda_workspace_bytes(Provider provider,
                                                                   std::int64_t rows,
                                                                   std::int64_t hidden,
                                                                   int sm_count);
[[nodiscard]] core::Status layer_norm_forward_cuda(Provider provider, const LayerNormForward& args,
                                                   cudaStream_t stream);
[[nodiscard]] core::Status layer_norm_backward_cuda(Provider provider,
                                                    const LayerNormBackward& args,
                                                    DeviceWorkspace workspace, int sm_count,
                                                    cudaStream_t stream);

[[nodiscard]] std::size_t tvd_forward_cuda_workspace_bytes(Provider provider, std::int64_t tokens,
                                                           std::int64_t vocab, DType dtype);
[[nodiscard]] std::size_t tvd_backward_cuda_workspace_bytes(Provider provider, std::int64_t tokens,
                                                            std::int64_t vocab);
[[nodiscard]] core::Status tvd_forward_cuda(Provider provider, const TvdForward& args,
                                            DeviceWorkspace workspace, cudaStream_t stream);
[[nodiscard]] core::Status tvd_backward_cuda(Provider provider, const TvdBackward& args,
                                             DeviceWorkspace workspace, cudaStream_t stream);

}  // namespace kernelwatch::kernels::detail
