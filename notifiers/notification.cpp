#include "notifiers/notification.hpp"

namespace kernelwatch::notifiers {
namespace {

using core::ErrorCode;
using nlohmann::json;

// An alert item as kernelwatch 0.1 queued it: flat fields, "state" firing|resolved being the
// notice. Only read, never written.
core::Result<NotifiedAlert> legacy_item(const json& item) {
  try {
    NotifiedAlert n;
    core::Alert& a = n.alert;
    a.id = item.at("id").get<std::string>();
    a.key = {item.at("benchmark").get<std::string>(),
             item.at("provider").get<std::string>(),
             item.at("workload").get<std::string>(),
             item.at("environment").get<std::string>(),
             "",
             ""};
    n.notice = KW_TRY(core::parse_notice(item.at("state").get<std::string>()));
    a.kind = KW_TRY(core::parse_alert_kind(item.at("kind").get<std::string>()));
    a.direction = KW_TRY(core::parse_direction(item.at("direction").get<std::string>()));
    a.state = n.notice == Notice::Resolved ? core::AlertState::Resolved : core::AlertState::Firing;
    core::AlertRun run;
    run.external_id = item.value("externalId", "");
    run.observed_at = KW_TRY(core::parse_timestamp(item.at("observedAt").get<std::string>()));
    run.median = std::chrono::nanoseconds(item.at("medianNs").get<std::int64_t>());
    a.fired = run;
    a.onset = run;
    if (n.notice == Notice::Resolved) a.closed_by = run;
    a.band.lower = std::chrono::nanoseconds(item.at("bandLowerNs").get<std::int64_t>());
    a.band.upper = std::chrono::nanoseconds(item.at("bandUpperNs").get<std::int64_t>());
    a.relative_change = item.at("relativeChange").get<double>();
    a.baseline_runs = item.at("baselineRuns").get<std::size_t>();
    // 0.1 sent attribution (or a failed run's reason) as text: keep it as the explanation.
    a.explanation = item.value("attribution", "");
    if (const auto record = item.find("run"); record != item.end()) n.run_record = *record;
    return n;
  } catch (const json::exception& e) {
    return core::fail(ErrorCode::ParseError, std::string("notification alert: ") + e.what());
  }
}

core::Result<NotifiedAlert> item_from_json(const json& item) {
  if (!item.is_object()) return core::fail(ErrorCode::ParseError, "an alert item is not an object");
  if (!item.contains("alert")) return legacy_item(item);
  NotifiedAlert n;
  const auto notice = item.find("notice");
  if (notice == item.end() || !notice->is_string()) {
    return core::fail(ErrorCode::ParseError, "an alert item needs a notice");
  }
  n.notice = KW_TRY(core::parse_notice(notice->get<std::string>()));
  auto alert = core::alert_from_json(item.at("alert"));
  if (!alert) return tl::unexpected(alert.error().with_context("alert"));
  n.alert = std::move(*alert);
  if (const auto record = item.find("run"); record != item.end()) n.run_record = *record;
  return n;
}

}  // namespace

json to_json(const Notification& notification) {
  json alerts = json::array();
  for (const auto& n : notification.alerts) {
    json item = {{"notice", core::to_string(n.notice)}, {"alert", core::to_json(n.alert)}};
    if (!n.run_record.is_null()) item["run"] = n.run_record;
    alerts.push_back(std::move(item));
  }
  return json{{"idempotencyKey", notification.idempotency_key},
              {"createdAt", core::format_timestamp(notification.created_at)},
              {"host", notification.host},
              {"alerts", std::move(alerts)}};
}

core::Result<Notification> notification_from_json(const json& doc) {
  if (!doc.is_object()) return core::fail(ErrorCode::ParseError, "notification is not an object");
  const auto key = doc.find("idempotencyKey");
  const auto created = doc.find("createdAt");
  const auto alerts = doc.find("alerts");
  if (key == doc.end() || !key->is_string() || created == doc.end() || !created->is_string() ||
      alerts == doc.end() || !alerts->is_array()) {
    return core::fail(ErrorCode::ParseError,
                      "notification needs idempotencyKey, createdAt and an alerts array");
  }
  Notification n;
  n.idempotency_key = key->get<std::string>();
  auto created_at = core::parse_timestamp(created->get<std::string>());
  if (!created_at) return tl::unexpected(created_at.error().with_context("createdAt"));
  n.created_at = *created_at;
  if (const auto host = doc.find("host"); host != doc.end() && host->is_string()) {
    n.host = host->get<std::string>();
  }
  for (const auto& item : *alerts) n.alerts.push_back(KW_TRY(item_from_json(item)));
  return n;
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
