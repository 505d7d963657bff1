// Total variation distance loss, 0.5 * sum |p - q| per row, on the CPU in both providers, plus
// the argument checks the CUDA backend shares. p and q are used as given (no softmax), fp32 or
// bf16 with fp32 accumulation, 64-bit indexing. Plain C++ and core/ only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.hpp"
#include "kernels/catalogue.hpp"
#include "kernels/types.hpp"

namespace kernelwatch::kernels {

// loss = scale * 0.5 * sum over non-ignored rows of |p - q| (Reduction::None: the elementwise
// 0.5 * |p - q|, 0 on ignored rows); grad = dloss/dp = 0.5 * sign(p - q) * scale, 0 where
// p == q and on ignored rows. scale: batchmean 1 / kept rows, mean 1 / (kept rows * vocab),
// sum and none 1; 0 when every row is ignored.
struct TvdForward {
  TensorRef p;       // tokens x vocab, fp32 or bf16
  TensorRef q;       // tokens x vocab, type of p
  TensorRef labels;  // tokens x 1, int64; absent (data == nullptr) when no row is ignored
  TensorRef loss;    // 1 x 1 fp32, or tokens x vocab fp32 for Reduction::None (written)
  TensorRef grad;    // tokens x vocab, type of p (written)
  Reduction reduction = Reduction::BatchMean;
  std::int64_t ignore_index = kDefaultIgnoreIndex;
};

// dp = grad * grad_output: the forward's gradient scaled by the upstream gradient.
struct TvdBackward {
  TensorRef grad;         // tokens x vocab, fp32 or bf16: the forward's grad
  TensorRef grad_output;  // 1 x 1 fp32, or tokens x vocab fp32 for Reduction::None
  TensorRef dp;           // tokens x vocab, type of grad (written)
};

[[nodiscard]] core::Status validate(const TvdForward& args);
[[nodiscard]] core::Status validate(const TvdBackward& args);
// tokens, vocab >= 1 and every tensor's bytes fit in 64 bits.
[[nodiscard]] core::Status validate_tvd_shape(std::int64_t tokens, std::int64_t vocab, DType dtype);

// The scale described above; kept_rows is the number of rows whose label is not ignore_index.
[[nodiscard]] double tvd_scale(Reduction reduction, std::int64_t kept_rows, std::int64_t vocab);

// Scratch bytes the CPU entry points need: the reference provider's intermediate tensors and
// both providers' per-block loss partials.
[[nodiscard]] std::size_t tvd_forward_cpu_workspace_bytes(Provider provider, std::int64_t tokens,
                                                          std::int64_t vocab, DType dtype);
[[nodiscard]] std::size_t tvd_backward_cpu_workspace_bytes(Provider provider, std::int64_t tokens,
                                                           std::int64_t vocab);

[[nodiscard]] core::Status tvd_forward_cpu(Provider provider, const TvdForward& args,
                                           std::span<std::byte> workspace);
[[nodiscard]] core::Status tvd_backward_cpu(Provider provider, const TvdBackward& args,
                                            std::span<std::byte> workspace);

// TVD's entry in the catalogue (tvd_kernel.cpp).
[[nodiscard]] const KernelDescriptor& tvd_descriptor();

namespace detail {

// The arguments of a pass from the case's tensors (tvd_kernel.cpp), for
// the CPU and the CUDA entry points alike.
[[nodiscard]] TvdForward tvd_forward_args(const PassArgs& args);
[[nodiscard]] TvdBackward tvd_backward_args(const PassArgs& args);
// The CUDA entry points (tvd.cu), built only with CUDA.
[[nodiscard]] const BackendOps& tvd_cuda_ops();

}  // namespace detail

}  // namespace kernelwatch::kernels
