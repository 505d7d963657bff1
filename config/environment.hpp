// The environment variables the config loader may read secrets from, behind an injectable
// lookup so tests never depend on the real process environment. Standard library only.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace kernelwatch::config {

class Environment {
 public:
  using Lookup = std::function<std::optional<std::string>(const std::string& name)>;

  explicit Environment(Lookup lookup);

  // The real process environment (getenv), read at each get().
  [[nodiscard]] static Environment process();
  // A fixed set of variables; everything else is unset.
  [[nodiscard]] static Environment from_map(std::map<std::string, std::string> variables);

  [[nodiscard]] std::optional<std::string> get(const std::string& name) const;

 private:
  Lookup lookup_;
};

// POSIX portable names: [A-Za-z_][A-Za-z0-9_]*.
[[nodiscard]] bool is_valid_variable_name(const std::string& name);

}  // namespace kernelwatch::config
