// RMSNorm forward (y, rstd) and backward (dx, dweight) on the CPU, in both
// providers. Rows x hidden, hidden 1..65536, fp32 or bf16 tensors with fp32
// accumulation; CPU only (no CUDA implementation yet). Plain C++ and core/
// only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.hpp"
#include "kernels/catalogue.hpp"
#include "kernels/types.hpp"

namespace kernelwatch::kernels {

inline constexpr std::int64_t kMaxRmsNormHidden = 65536;

// y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps) per row (Liger's and
// Llama's RMSNorm, offset 0).
struct RmsNormForward {
  TensorRef x;       // rows x hidden, fp32 or bf16
  TensorRef weight;  // 1 x hidden, type of x
  TensorRef y;       // rows x hidden, type of x (written)
  TensorRef rstd;    // rows x 1, fp32 (written)
  double eps = 1e-6;
};

// Gradients of the forward above given the upstream dy and the forward's rstd:
// xhat = x * rstd, dx = rstd * (dy * w - xhat * mean(dy * w * xhat)), dweight =
// sum_rows(dy * xhat).
struct RmsNormBackward {
  TensorRef dy;       // rows x hidden, type of x
  TensorRef x;        // rows x hidden, fp32 or bf16
  TensorRef weight;   // 1 x hidden, type of x
  TensorRef rstd;     // rows x 1, fp32
  TensorRef dx;       // rows x hidden, type of x (written)
  TensorRef dweight;  // 1 x hidden, type of x (written)
};

[[nodiscard]] core::Status validate(const RmsNormForward& args);
[[nodiscard]] core::Status validate(const RmsNormBackward& args);
// rows >= 1, 1 <= hidden <= kMaxRmsNormHidden, eps > 0 and finite, bytes fit in
// 64 bits.
[[nodiscard]] core::Status validate_rms_norm_shape(std::int64_t rows, std::int64_t hidden,
                                                   DType dtype, double eps);

// Scratch bytes rms_norm_backward_cpu needs (the fused provider's per-block
// dweight partials).
[[nodiscard]] std::size_t rms_norm_backward_cpu_workspace_bytes(Provider provider,
                                                                std::int64_t rows,
                                                                std::int64_t hidden);

// Run on the calling thread plus the CPU pool; results are bit-identical from
// run to run and for any thread count.
[[nodiscard]] core::Status rms_norm_forward_cpu(Provider provider, const RmsNormForward& args);
[[nodiscard]] core::Status rms_norm_backward_cpu(Provider provider, const RmsNormBackward& args,
                                                 std::span<std::byte> workspace);

// RMSNorm's entry in the catalogue (rms_norm_kernel.cpp).
[[nodiscard]] const KernelDescriptor& rms_norm_descriptor();

}  // namespace kernelwatch::kernels
