// Private to kernels/: the tensor checks the LayerNorm and TVD argument validators share.
// Plain C++ and core/ only.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"
#include "kernels/types.hpp"

namespace kernelwatch::kernels::detail {

// `tensor` is present, of `type` and exactly rows x cols; the message starts with `what`.
[[nodiscard]] core::Status expect_tensor(std::string_view what, const TensorRef& tensor,
                                         ElementType type, std::int64_t rows, std::int64_t cols);

// fp32 or bf16, present, with a valid positive extent.
[[nodiscard]] core::Status expect_float_matrix(std::string_view what, const TensorRef& tensor);

}  // namespace kernelwatch::kernels::detail
