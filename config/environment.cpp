#include "config/environment.hpp"

#include <cstdlib>
#include <utility>

namespace kernelwatch::config {

Environment::Environment(Lookup lookup) : lookup_(std::move(lookup)) {}

Environment Environment::process() {
  return Environment([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

Environment Environment::from_map(std::map<std::string, std::string> variables) {
  return Environment(
      [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
        const auto it = variables.find(name);
        if (it == variables.end()) return std::nullopt;
        return it->second;
      });
}

std::optional<std::string> Environment::get(const std::string& name) const {
  return lookup_ ? lookup_(name) : std::nullopt;
}

bool is_valid_variable_name(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

}  // namespace kernelwatch::config
