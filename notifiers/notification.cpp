#include "notifiers/notification.hpp"

#include <array>

namespace kernelwatch::notifiers {
namespace {

using core::ErrorCode;
using nlohmann::json;

template <class Enum, std::size_t N>
core::Result<Enum> parse_enum(const json& doc, const char* field,
                              const std::array<Enum, N>& values) {
  const auto it = doc.find(field);
  if (it == doc.end() || !it->is_string()) {
    return core::fail(ErrorCode::ParseError, std::string("`") + field + "` must be a string");
  }
  const auto text = it->get<std::string>();
  for (Enum value : values) {
    if (to_string(value) == text) return value;
  }
  return core::fail(ErrorCode::ParseError,
                    std::string("`") + field + "` has the unknown value `" + text + "`");
}

}  // namespace

std::string_view to_string(AlertState state) noexcept {
  return state == AlertState::Firing ? "firing" : "resolved";
}

json to_json(const Notification& notification) {
  json alerts = json::array();
  for (const auto& a : notification.alerts) {
    json alert = {
        {"id", a.id},
        {"benchmark", a.key.benchmark},
        {"provider", a.key.provider},
        {"workload", a.key.workload},
        {"environment", a.key.environment},
        {"state", to_string(a.state)},
        {"kind", to_string(a.kind)},
        {"direction", to_string(a.direction)},
        {"medianNs", a.median.count()},
        {"bandLowerNs", a.band_lower.count()},
        {"bandUpperNs", a.band_upper.count()},
        {"relativeChange", a.relative_change},
        {"baselineRuns", a.baseline_runs},
        {"attribution", a.attribution},
        {"externalId", a.external_id},
        {"observedAt", core::format_timestamp(a.observed_at)},
    };
    if (!a.run_record.is_null()) alert["run"] = a.run_record;
    alerts.push_back(std::move(alert));
  }
  return json{{"idempotencyKey", notification.idempotency_key},
              {"createdAt", core::format_timestamp(notification.created_at)},
              {"host", notification.host},
              {"alerts", std::move(alerts)}};
}

core::Result<Notification> notification_from_json(const json& doc) {
  if (!doc.is_object()) return core::fail(ErrorCode::ParseError, "notification is not an object");
  try {
    Notification n;
    n.idempotency_key = doc.at("idempotencyKey").get<std::string>();
    auto created = core::parse_timestamp(doc.at("createdAt").get<std::string>());
    if (!created) return tl::unexpected(created.error().with_context("createdAt"));
    n.created_at = *created;
    n.host = doc.value("host", "");
    for (const auto& item : doc.at("alerts")) {
      Alert a;
      a.id = item.at("id").get<std::string>();
      a.key = {item.at("benchmark").get<std::string>(), item.at("provider").get<std::string>(),
               item.at("workload").get<std::string>(), item.at("environment").get<std::string>()};
      auto state = parse_enum(item, "state", std::array{AlertState::Firing, AlertState::Resolved});
      auto kind = parse_enum(
          item, "kind",
          std::array{AlertKind::Step, AlertKind::Drift, AlertKind::Environment, AlertKind::Failed});
      auto direction =
          parse_enum(item, "direction", std::array{Direction::Regression, Direction::Improvement});
      if (!state) return tl::unexpected(state.error());
      if (!kind) return tl::unexpected(kind.error());
      if (!direction) return tl::unexpected(direction.error());
      a.state = *state;
      a.kind = *kind;
      a.direction = *direction;
      a.median = std::chrono::nanoseconds(item.at("medianNs").get<std::int64_t>());
      a.band_lower = std::chrono::nanoseconds(item.at("bandLowerNs").get<std::int64_t>());
      a.band_upper = std::chrono::nanoseconds(item.at("bandUpperNs").get<std::int64_t>());
      a.relative_change = item.at("relativeChange").get<double>();
      a.baseline_runs = item.at("baselineRuns").get<std::int64_t>();
      a.attribution = item.value("attribution", "");
      a.external_id = item.value("externalId", "");
      auto observed = core::parse_timestamp(item.at("observedAt").get<std::string>());
      if (!observed) return tl::unexpected(observed.error().with_context("observedAt"));
      a.observed_at = *observed;
      if (auto run = item.find("run"); run != item.end()) a.run_record = *run;
      n.alerts.push_back(std::move(a));
    }
    return n;
  } catch (const json::exception& e) {
    return core::fail(ErrorCode::ParseError, std::string("notification: ") + e.what());
  }
}

std::string serialize(const Notification& notification) {
  return to_json(notification).dump();
}

core::Result<Notification> parse_notification(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return core::fail(ErrorCode::ParseError, "notification is not JSON");
  return notification_from_json(doc);
}

}  // namespace kernelwatch::notifiers
