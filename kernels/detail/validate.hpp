// Private to kernels/: the argument checks the kernels' validators share: a tensor's presence,
// type and shape (one or a list), a rows x hidden shape with its largest hidden and eps, the
// workspace an entry point is handed. Each message starts with what the caller names.
// Plain C++ and core/ only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "kernels/types.hpp"

namespace kernelwatch::kernels::detail {

// `tensor` is present, of `type` and exactly rows x cols; the message starts with `what`.
[[nodiscard]] core::Status expect_tensor(std::string_view what, const TensorRef& tensor,
                                         ElementType type, std::int64_t rows, std::int64_t cols);

// One row of a validator's table of tensors, checked as expect_tensor() checks it.
struct TensorCheck {
  std::string_view what;
  const TensorRef& tensor;
  ElementType type;
  std::int64_t rows;
  std::int64_t cols;
};
// Each in order; the first that fails is the answer.
[[nodiscard]] core::Status expect_tensors(std::initializer_list<TensorCheck> checks);

// fp32 or bf16, present, with a valid positive extent.
[[nodiscard]] core::Status expect_float_matrix(std::string_view what, const TensorRef& tensor);

// expect_float_matrix(), and at most max_hidden columns ("<what>: hidden N exceeds the maximum").
[[nodiscard]] core::Status expect_rows_hidden(std::string_view what, const TensorRef& x,
                                              std::int64_t max_hidden);

// eps > 0 and finite ("<what>: eps must be positive and finite, got E").
[[nodiscard]] core::Status expect_eps(std::string_view what, double eps);

// A normalization's shape before anything is allocated: dtype fp32 or bf16, rows >= 1,
// 1 <= hidden <= max_hidden, eps > 0 and finite, bytes fit in 64 bits; messages start with
// `kernel` ("rms_norm").
[[nodiscard]] core::Status validate_rows_hidden_shape(std::string_view kernel, std::int64_t rows,
                                                      std::int64_t hidden, DType dtype, double eps,
                                                      std::int64_t max_hidden);

// At least `needed` bytes of workspace ("<what>: workspace of N bytes, need M").
[[nodiscard]] core::Status expect_workspace(std::string_view what, std::size_t size,
                                            std::size_t needed);

}  // namespace kernelwatch::kernels::detail
