#include "kernels/types.hpp"

#include <algorithm>
#include <limits>

namespace kernelwatch::kernels {

using core::ErrorCode;

std::string_view to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::Cpu:
      return "cpu";
    case Backend::Cuda:
      return "cuda";
  }
  return "unknown";
}

std::string_view to_string(Reduction reduction) noexcept {
  switch (reduction) {
    case Reduction::BatchMean:
      return "batchmean";
    case Reduction::Sum:
      return "sum";
    case Reduction::Mean:
      return "mean";
    case Reduction::None:
      return "none";
  }
  return "unknown";
}

std::string_view to_string(ElementType type) noexcept {
  switch (type) {
    case ElementType::Fp32:
      return "fp32";
    case ElementType::Bf16:
      return "bf16";
    case ElementType::Int64:
      return "int64";
  }
  return "unknown";
}

core::Result<Backend> parse_backend(std::string_view text) {
  static constexpr Backend kValues[] = {Backend::Cpu, Backend::Cuda};
  return core::parse_name("backend", text, kValues);
}

core::Result<Reduction> parse_reduction(std::string_view text) {
  static constexpr Reduction kValues[] = {Reduction::BatchMean, Reduction::Sum, Reduction::Mean,
                                          Reduction::None};
  return core::parse_name("reduction", text, kValues);
}

core::Result<ElementType> element_type(DType dtype) {
  switch (dtype) {
    case DType::Fp32:
      return ElementType::Fp32;
    case DType::Bf16:
      return ElementType::Bf16;
    case DType::Fp16:
      break;
  }
  return core::fail(ErrorCode::InvalidArgument,
                    "dtype " + std::string(core::to_string(dtype)) +
                        " is not supported by the kernelwatch kernels (fp32 or bf16)");
}

std::size_t element_size(ElementType type) noexcept {
  switch (type) {
    case ElementType::Fp32:
      return 4;
    case ElementType::Bf16:
      return 2;
    case ElementType::Int64:
      return 8;
  }
  return 1;
}

core::Status validate_extent(std::string_view what, std::int64_t rows, std::int64_t cols,
                             ElementType type) {
  if (rows <= 0 || cols <= 0) {
    return core::fail(ErrorCode::InvalidArgument,
                      std::string(what) + " must have at least one row and one column (got " +
                          std::to_string(rows) + " x " + std::to_string(cols) + ")");
  }
  const auto size = static_cast<std::int64_t>(element_size(type));
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::int64_t max_bytes = static_cast<std::int64_t>(std::min<std::uint64_t>(
      static_cast<std::uint64_t>(kMax), std::numeric_limits<std::size_t>::max()));
  if (rows > max_bytes / cols || rows * cols > max_bytes / size) {
    return core::fail(ErrorCode::InvalidArgument,
                      std::string(what) + " of " + std::to_string(rows) + " x " +
                          std::to_string(cols) + " " + std::string(to_string(type)) +
                          " elements overflows a 64-bit byte count");
  }
  return {};
}

}  // namespace kernelwatch::kernels
