// LayerNorm forward (y, mean, rstd) and backward (dx, dweight, dbias) on the CPU, in both
// providers, plus the argument checks the CUDA backend shares. Rows x hidden, hidden 1..65536,
// fp32 or bf16 tensors with fp32 accumulation. Plain C++ and core/ only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.hpp"
#include "kernels/catalogue.hpp"
#include "kernels/types.hpp"

namespace kernelwatch::kernels {

// y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps), var the biased variance.
struct LayerNormForward {
  TensorRef x;       // rows x hidden, fp32 or bf16
  TensorRef weight;  // 1 x hidden, type of x
  TensorRef bias;    // 1 x hidden, type of x
  TensorRef y;       // rows x hidden, type of x (written)
  TensorRef mean;    // rows x 1, fp32 (written)
  TensorRef rstd;    // rows x 1, fp32 (written)
  double eps = kDefaultLayerNormEps;
};

// Gradients of the forward above given the upstream dy and the forward's mean and rstd.
struct LayerNormBackward {
  TensorRef dy;       // rows x hidden, type of x
  TensorRef x;        // rows x hidden, fp32 or bf16
  TensorRef weight;   // 1 x hidden, type of x
  TensorRef mean;     // rows x 1, fp32
  TensorRef rstd;     // rows x 1, fp32
  TensorRef dx;       // rows x hidden, type of x (written)
  TensorRef dweight;  // 1 x hidden, type of x (written)
  TensorRef dbias;    // 1 x hidden, type of x (written)
};

// Shape and type checks, before any work: names the offending tensor.
[[nodiscard]] core::Status validate(const LayerNormForward& args);
[[nodiscard]] core::Status validate(const LayerNormBackward& args);
// rows >= 1, 1 <= hidden <= kMaxLayerNormHidden, eps > 0 and finite, bytes fit in 64 bits.
[[nodiscard]] core::Status validate_layer_norm_shape(std::int64_t rows, std::int64_t hidden,
                                                     DType dtype, double eps);

// Scratch bytes layer_norm_backward_cpu needs (the fused provider's per-block dw/db partials).
[[nodiscard]] std::size_t layer_norm_backward_cpu_workspace_bytes(Provider provider,
                                                                  std::int64_t rows,
                                                                  std::int64_t hidden);

// Run on the calling thread plus the CPU pool (see cpu_threads.hpp); results are bit-identical
// from run to run and for any thread count.
[[nodiscard]] core::Status layer_norm_forward_cpu(Provider provider, const LayerNormForward& args);
[[nodiscard]] core::Status layer_norm_backward_cpu(Provider provider, const LayerNormBackward& args,
                                                   std::span<std::byte> workspace);

// LayerNorm's entry in the catalogue (layer_norm_kernel.cpp).
[[nodiscard]] const KernelDescriptor& layer_norm_descriptor();

namespace detail {

// The arguments of a pass from the case's tensors (layer_norm_kernel.cpp), for
// the CPU and the CUDA entry points alike.
[[nodiscard]] LayerNormForward layer_norm_forward_args(const PassArgs& args);
[[nodiscard]] LayerNormBackward layer_norm_backward_args(const PassArgs& args);
// The CUDA entry points (layer_norm.cu), built only with CUDA.
[[nodiscard]] const BackendOps& layer_norm_cuda_ops();

}  // namespace detail

}  // namespace kernelwatch::kernels
