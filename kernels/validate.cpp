#include "kernels/detail/validate.hpp"

namespace kernelwatch::kernels::detail {

namespace {
std::string dims(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}
}  // namespace

core::Status expect_tensor(std::string_view what, const TensorRef& tensor, ElementType type,
                           std::int64_t rows, std::int64_t cols) {
  const std::string name(what);
  if (!tensor.present()) {
    return core::fail(core::ErrorCode::InvalidArgument, name + " is missing (null data)");
  }
  if (tensor.type != type) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      name + " must be " + std::string(to_string(type)) + ", got " +
                          std::string(to_string(tensor.type)));
  }
  if (tensor.rows != rows || tensor.cols != cols) {
    return core::fail(
        core::ErrorCode::InvalidArgument,
        name + " must be " + dims(rows, cols) + ", got " + dims(tensor.rows, tensor.cols));
  }
  return {};
}

core::Status expect_float_matrix(std::string_view what, const TensorRef& tensor) {
  const std::string name(what);
  if (!tensor.present()) {
    return core::fail(core::ErrorCode::InvalidArgument, name + " is missing (null data)");
  }
  if (tensor.type != ElementType::Fp32 && tensor.type != ElementType::Bf16) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      name + " must be fp32 or bf16, got " + std::string(to_string(tensor.type)));
  }
  return validate_extent(what, tensor.rows, tensor.cols, tensor.type);
}

}  // namespace kernelwatch::kernels::detail
