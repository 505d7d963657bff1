#include "core/names.hpp"

namespace kernelwatch::core {

std::string_view to_string(Pass pass) noexcept {
  switch (pass) {
    case Pass::Forward:
      return "forward";
    case Pass::Backward:
      return "backward";
    case Pass::Full:
      return "full";
  }
  return "unknown";
}

std::string_view to_string(Provider provider) noexcept {
  switch (provider) {
    case Provider::Fused:
      return "kernelwatch-fused";
    case Provider::Reference:
      return "kernelwatch-reference";
  }
  return "unknown";
}

Result<Pass> parse_pass(std::string_view text) {
  return parse_name("pass", text, kPasses);
}

Result<Provider> parse_provider(std::string_view text) {
  return parse_name("provider", text, kProviders);
}

}  // namespace kernelwatch::core
