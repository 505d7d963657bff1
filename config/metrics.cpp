#include "config/metrics.hpp"

#include <array>
#include <optional>
#include <string>

namespace kernelwatch::config {
namespace {

constexpr std::array kPerKey{PerKeyMetrics::All, PerKeyMetrics::Problems, PerKeyMetrics::None};

std::optional<PerKeyMetrics> parse_per_key(std::string_view text) {
  for (const auto value : kPerKey) {
    if (to_string(value) == text) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(PerKeyMetrics per_key) noexcept {
  switch (per_key) {
    case PerKeyMetrics::All:
      return "all";
    case PerKeyMetrics::Problems:
      return "problems";
    case PerKeyMetrics::None:
      return "none";
  }
  return "problems";
}

core::Status read_metrics(const core::JsonField& field, MetricsConfig& out) {
  const core::JsonField object = KW_TRY(field.object());
  for (const std::string& name : object.keys()) {
    if (name != "per_key") return object[name].error("unknown field");
  }
  const core::JsonField per_key = object["per_key"];
  if (!per_key.present()) return {};
  const std::string text = KW_TRY(per_key.string());
  const auto parsed = parse_per_key(text);
  if (!parsed) {
    // Short values only: a long one is not echoed (it could be a secret pasted in the wrong place).
    const std::string shown = text.size() > 32 ? std::string("the value") : "\"" + text + "\"";
    return per_key.error(shown +
                         " is not one of all, problems, none (which keys get series of their own)");
  }
  out.per_key = *parsed;
  return {};
}

nlohmann::json metrics_json(const MetricsConfig& metrics) {
  return {{"per_key", std::string(to_string(metrics.per_key))}};
}

}  // namespace kernelwatch::config
