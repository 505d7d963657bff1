// The argument checks the kernels' validators share (detail/validate.hpp).
#include "kernels/detail/validate.hpp"

#include <cmath>

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

core::Status expect_tensors(std::initializer_list<TensorCheck> checks) {
  for (const TensorCheck& check : checks) {
    KW_TRY(expect_tensor(check.what, check.tensor, check.type, check.rows, check.cols));
  }
  return {};
}

core::Status expect_rows_hidden(std::string_view what, const TensorRef& x,
                                std::int64_t max_hidden) {
  KW_TRY(expect_float_matrix(what, x));
  if (x.cols > max_hidden) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      std::string(what) + ": hidden " + std::to_string(x.cols) +
                          " exceeds the maximum " + std::to_string(max_hidden));
  }
  return {};
}

core::Status expect_eps(std::string_view what, double eps) {
  if (!(eps > 0.0) || !std::isfinite(eps)) {
    return core::fail(
        core::ErrorCode::InvalidArgument,
        std::string(what) + ": eps must be positive and finite, got " + std::to_string(eps));
  }
  return {};
}

core::Status validate_rows_hidden_shape(std::string_view kernel, std::int64_t rows,
                                        std::int64_t hidden, DType dtype, double eps,
                                        std::int64_t max_hidden) {
  const std::string name(kernel);
  const ElementType type = KW_TRY_WITH(element_type(dtype), name);
  KW_TRY(validate_extent(name + ": x", rows, hidden, type));
  if (hidden > max_hidden) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      name + ": hidden " + std::to_string(hidden) + " exceeds the maximum " +
                          std::to_string(max_hidden));
  }
  return expect_eps(kernel, eps);
}

core::Status expect_workspace(std::string_view what, std::size_t size, std::size_t needed) {
  if (size < needed) {
    return core::fail(core::ErrorCode::InvalidArgument, std::string(what) + ": workspace of " +
                                                            std::to_string(size) + " bytes, need " +
                                                            std::to_string(needed));
  }
  return {};
}

}  // namespace kernelwatch::kernels::detail
