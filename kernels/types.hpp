// Vocabulary of the kernels module: backend and reduction names (pass and provider are core's,
// core/names.hpp; a kernel is its name in the catalogue, kernels/catalogue.hpp), the bf16
// storage type, and TensorRef, the plain view every kernel entry point takes. Plain C++ and
// core/ only: this header compiles without CUDA.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/key.hpp"
#include "core/names.hpp"

namespace kernelwatch::kernels {

// Core's names, used unqualified throughout the kernels (to_string() is found with them).
using core::DType;
using core::Pass;
using core::Provider;

enum class Backend { Cpu, Cuda };
// TVD loss reduction. BatchMean divides by the non-ignored rows, Mean by non-ignored rows times
// vocab; both give 0 (not a division by zero) when every row is ignored.
enum class Reduction { BatchMean, Sum, Mean, None };
enum class ElementType { Fp32, Bf16, Int64 };

inline constexpr double kDefaultLayerNormEps = 1e-6;
inline constexpr std::int64_t kMaxLayerNormHidden = 65536;
inline constexpr std::int64_t kDefaultIgnoreIndex = -100;

[[nodiscard]] std::string_view to_string(Backend backend) noexcept;      // "cpu", "cuda"
[[nodiscard]] std::string_view to_string(Reduction reduction) noexcept;  // "batchmean", ...
[[nodiscard]] std::string_view to_string(ElementType type) noexcept;     // "fp32", ...

[[nodiscard]] core::Result<Backend> parse_backend(std::string_view text);
[[nodiscard]] core::Result<Reduction> parse_reduction(std::string_view text);

// The element type a kernel input of this dtype uses; fp16 is not supported by these kernels.
[[nodiscard]] core::Result<ElementType> element_type(DType dtype);
[[nodiscard]] std::size_t element_size(ElementType type) noexcept;

// bfloat16 storage: the upper half of an IEEE binary32.
struct Bf16 {
  std::uint16_t bits = 0;
};

[[nodiscard]] inline float to_float(Bf16 value) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value.bits) << 16);
}

// Round to nearest, ties to even; NaN stays a (quiet) NaN.
[[nodiscard]] inline Bf16 to_bf16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return Bf16{static_cast<std::uint16_t>((bits >> 16) | 0x0040u)};
  }
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return Bf16{static_cast<std::uint16_t>(rounded >> 16)};
}

// A row-major, contiguous rows x cols tensor owned by the caller: host memory for the CPU
// entry points, device memory inside the CUDA backend. Inputs are only read. A vector is
// 1 x n, a per-row value rows x 1, a scalar 1 x 1; data == nullptr means "absent".
struct TensorRef {
  void* data = nullptr;
  ElementType type = ElementType::Fp32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;

  [[nodiscard]] std::int64_t elements() const noexcept { return rows * cols; }
  [[nodiscard]] bool present() const noexcept { return data != nullptr; }
};

// Checks that `rows * cols * element_size` is positive and fits in int64 and size_t; `what`
// names the tensor in the message ("tvd: p has 0 rows").
[[nodiscard]] core::Status validate_extent(std::string_view what, std::int64_t rows,
                                           std::int64_t cols, ElementType type);

}  // namespace kernelwatch::kernels
