#include "core/alert.hpp"

namespace kernelwatch::core {

std::string_view to_string(AlertKind kind) noexcept {
  switch (kind) {
    case AlertKind::Step:
      return "step";
    case AlertKind::Drift:
      return "drift";
    case AlertKind::Environment:
      return "environment";
    case AlertKind::Failed:
      return "failed";
  }
  return "step";
}

std::string_view to_string(Direction direction) noexcept {
  return direction == Direction::Regression ? "regression" : "improvement";
}

}  // namespace kernelwatch::core
