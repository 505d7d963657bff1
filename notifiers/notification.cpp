#include "notifiers/notification.hpp"

namespace kernelwatch::notifiers {
namespace {

using core::ErrorCode;
using core::JsonField;
using nlohmann::json;

// An alert item as kernelwatch 0.1 queued it: flat fields, "state" firing|resolved being the
// notice. Only read, never written.
core::Result<NotifiedAlert> legacy_item(const JsonField& item) {
  NotifiedAlert n;
  core::Alert& a = n.alert;
  a.id = core::AlertId(KW_TRY(item["id"].string()));
  a.key.benchmark = KW_TRY(item["benchmark"].string());
  a.key.provider = KW_TRY(item["provider"].string());
  a.key.workload = KW_TRY(item["workload"].string());
  a.key.environment = KW_TRY(item["environment"].string());
  n.notice = KW_TRY(item["state"].parsed(core::parse_notice));
  a.kind = KW_TRY(item["kind"].parsed(core::parse_alert_kind));
  a.direction = KW_TRY(item["direction"].parsed(core::parse_direction));
  a.state = n.notice == Notice::Resolved ? core::AlertState::Resolved : core::AlertState::Firing;
  core::AlertRun run;
  run.external_id = KW_TRY(item["externalId"].string_or(""));
  run.observed_at = KW_TRY(item["observedAt"].timestamp());
  run.median = std::chrono::nanoseconds(KW_TRY(item["medianNs"].integer()));
  a.fired = run;
  a.onset = run;
  if (n.notice == Notice::Resolved) a.closed_by = run;
  a.band.lower = std::chrono::nanoseconds(KW_TRY(item["bandLowerNs"].integer()));
  a.band.upper = std::chrono::nanoseconds(KW_TRY(item["bandUpperNs"].integer()));
  a.relative_change = KW_TRY(item["relativeChange"].number());
  a.baseline_runs = static_cast<std::size_t>(KW_TRY(item["baselineRuns"].integer()));
  // 0.1 sent attribution (or a failed run's reason) as text: keep it as the explanation.
  a.explanation = KW_TRY(item["attribution"].string_or(""));
  if (const JsonField record = item["run"]; record.present()) n.run_record = record.value();
  return n;
}

core::Result<NotifiedAlert> item_from_json(const JsonField& field) {
  const JsonField item = KW_TRY(field.object());
  if (!item["alert"].present()) return legacy_item(item);
  NotifiedAlert n;
  n.notice = KW_TRY(item["notice"].parsed(core::parse_notice));
  n.alert = KW_TRY(core::alert_from_json(item["alert"]));
  if (const JsonField record = item["run"]; record.present()) n.run_record = record.value();
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

core::Result<Notification> notification_from_json(const json& value) {
  const JsonField doc = KW_TRY(JsonField(value, "notification").object());
  Notification n;
  n.idempotency_key = KW_TRY(doc["idempotencyKey"].string());
  n.created_at = KW_TRY(doc["createdAt"].timestamp());
  n.host = KW_TRY(doc["host"].string_or(""));
  for (const JsonField& item : KW_TRY(doc["alerts"].array())) {
    n.alerts.push_back(KW_TRY(item_from_json(item)));
  }
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
