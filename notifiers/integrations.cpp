// The registry of receiver types (KW_RECEIVER_TYPES) and what an integration does unless it
// says otherwise.
#include "core/json_limits.hpp"
#include "notifiers/integration.hpp"

namespace kernelwatch::notifiers {

core::Status Integration::check(const Destination&, std::string_view) const {
  return {};
}

core::Url Integration::endpoint(core::Url url) const {
  return url;
}

std::string Integration::permanent_body(std::string_view) const {
  return {};
}

std::string Integration::permanent_hint(unsigned) const {
  return {};
}

const std::vector<const Integration*>& integrations() {
#define KW_LIST_INTEGRATION(type) &type##_integration(),
  static const std::vector<const Integration*> registered{KW_RECEIVER_TYPES(KW_LIST_INTEGRATION)};
#undef KW_LIST_INTEGRATION
  return registered;
}

const Integration* find_integration(std::string_view name) noexcept {
  for (const Integration* integration : integrations()) {
    if (integration->name() == name) return integration;
  }
  return nullptr;
}

const Integration& integration_named(std::string_view name) {
  const Integration* integration = find_integration(name);
  KW_ASSERT(integration != nullptr, "a destination type validate() accepted is registered");
  return *integration;
}

const Integration& integration_of(const Destination& destination) {
  return integration_named(destination.type);
}

core::Result<std::string> parse_destination_type(std::string_view text) {
  if (find_integration(text) != nullptr) return std::string(text);
  std::string known;
  for (const Integration* integration : integrations()) {
    known += (known.empty() ? "" : ", ") + std::string(integration->name());
  }
  return core::fail(
      core::ErrorCode::InvalidArgument,
      "unknown destination type \"" + core::utf8_prefix(text, 80) + "\" (known: " + known + ")");
}

std::string types_with(bool IntegrationTraits::*trait) {
  std::vector<std::string_view> names;
  for (const Integration* integration : integrations()) {
    if (integration->traits().*trait) names.push_back(integration->name());
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out.empty() ? std::string("no") : out;
}

}  // namespace kernelwatch::notifiers
