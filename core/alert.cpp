#include "core/alert.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "core/digest.hpp"
#include "core/names.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

json run_json(const AlertRun& run) {
  return json{{"externalId", run.external_id},
              {"observedAt", format_timestamp(run.observed_at)},
              {"median", run.median.count()}};
}

// A run an alert names: its externalId, observedAt and median fields. The median may be absent
// (documents of older versions, failed runs): 0 then.
Result<AlertRun> run_from_json(const JsonField& doc, std::string_view id, std::string_view at,
                               std::string_view median) {
  AlertRun run;
  run.external_id = KW_TRY(doc[id].string());
  run.observed_at = KW_TRY(doc[at].timestamp());
  run.median = std::chrono::nanoseconds{KW_TRY(doc[median].integer_or(0))};
  return run;
}

Result<std::vector<AttributionChange>> attribution_from_json(const JsonField& field) {
  std::vector<AttributionChange> changes;
  if (!field.present()) return changes;
  for (const JsonField& change : KW_TRY(field.array())) {
    changes.push_back({KW_TRY(change["field"].string()), KW_TRY(change["from"].string()),
                       KW_TRY(change["to"].string())});
  }
  return changes;
}

}  // namespace

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

std::string_view to_string(AlertState state) noexcept {
  switch (state) {
    case AlertState::Firing:
      return "firing";
    case AlertState::Acknowledged:
      return "acknowledged";
    case AlertState::Resolved:
      return "resolved";
    case AlertState::Rebaselined:
      return "rebaselined";
  }
  return "firing";
}

std::string_view to_string(Notice notice) noexcept {
  return notice == Notice::Firing ? "firing" : "resolved";
}

std::string_view to_string(KeyState state) noexcept {
  switch (state) {
    case KeyState::Firing:
      return "firing";
    case KeyState::Failing:
      return "failing";
    case KeyState::Incident:
      return "incident";
    case KeyState::Breached:
      return "breached";
    case KeyState::Acknowledged:
      return "acknowledged";
    case KeyState::Inconclusive:
      return "inconclusive";
    case KeyState::InBand:
      return "in_band";
    case KeyState::InsufficientData:
      return "insufficient_data";
  }
  return "insufficient_data";
}

// Every parser of these names is core::parse_name (core/names.hpp) over all the values.
Result<AlertKind> parse_alert_kind(std::string_view text) {
  static constexpr AlertKind kValues[] = {AlertKind::Step, AlertKind::Drift, AlertKind::Environment,
                                          AlertKind::Failed};
  return parse_name("alert kind", text, kValues);
}
Result<Direction> parse_direction(std::string_view text) {
  static constexpr Direction kValues[] = {Direction::Regression, Direction::Improvement};
  return parse_name("direction", text, kValues);
}
Result<AlertState> parse_alert_state(std::string_view text) {
  static constexpr AlertState kValues[] = {AlertState::Firing, AlertState::Acknowledged,
                                           AlertState::Resolved, AlertState::Rebaselined};
  return parse_name("alert state", text, kValues);
}
Result<Notice> parse_notice(std::string_view text) {
  static constexpr Notice kValues[] = {Notice::Firing, Notice::Resolved};
  return parse_name("notice", text, kValues);
}
Result<KeyState> parse_key_state(std::string_view text) {
  return parse_name("key state", text, kKeyStates);
}

std::string KeyLabels::display() const {
  return benchmark + " " + provider + " " + workload + " " + environment;
}

std::string describe(const std::vector<AttributionChange>& changes) {
  if (changes.empty()) return "no recorded implementation or software change";
  std::string text;
  for (const auto& change : changes) {
    if (!text.empty()) text += "; ";
    std::string field = change.field;
    for (char& c : field) {
      if (c == '.') c = ' ';
    }
    text += field + " changed " + (change.from.empty() ? "(unrecorded)" : change.from) + " -> " +
            (change.to.empty() ? "(unrecorded)" : change.to);
  }
  return text;
}

namespace {
json placement_json(const Placement& p) {
  json out = json::object();
  if (!p.host.empty()) out["host"] = p.host;
  if (!p.gpu.empty()) out["gpu"] = p.gpu;
  if (!p.gpu_uuid.empty()) out["uuid"] = p.gpu_uuid;
  if (!p.pci_bus_id.empty()) out["pciBusId"] = p.pci_bus_id;
  return out;
}

json members_json(const std::vector<Alert>& members) {
  json out = json::array();
  for (const auto& member : members) out.push_back(to_json(member));
  return out;
}
}  // namespace

json to_json(const Alert& alert) {
  json attribution = json::array();
  for (const auto& change : alert.attribution) {
    attribution.push_back({{"field", change.field}, {"from", change.from}, {"to", change.to}});
  }
  json out{
      {"id", alert.id.long_form()},
      {"benchmark", alert.key.benchmark},
      {"provider", alert.key.provider},
      {"workload", alert.key.workload},
      {"environment", alert.key.environment},
      {"protocol", alert.key.protocol},
      {"kind", to_string(alert.kind)},
      {"direction", to_string(alert.direction)},
      {"state", to_string(alert.state)},
      {"externalId", alert.fired.external_id},
      {"observedAt", format_timestamp(alert.fired.observed_at)},
      {"median", alert.fired.median.count()},
      {"onsetExternalId", alert.onset.external_id},
      {"onsetObservedAt", format_timestamp(alert.onset.observed_at)},
      {"onsetMedian", alert.onset.median.count()},
      {"closedBy", alert.closed_by ? run_json(*alert.closed_by) : json(nullptr)},
      {"band",
       {{"lower", alert.band.lower.count()},
        {"upper", alert.band.upper.count()},
        {"center", alert.band.center.count()}}},
      {"baselineRuns", alert.baseline_runs},
      {"relativeChange", alert.relative_change},
      {"attribution", std::move(attribution)},
      {"explanation", alert.explanation},
      {"incident", alert.incident.empty() ? json(nullptr) : json(alert.incident.long_form())},
      {"members", members_json(alert.members)},
  };
  if (!alert.placement.empty()) out["placement"] = placement_json(alert.placement);
  return out;
}

Result<Alert> alert_from_json(const json& doc) {
  return alert_from_json(JsonField(doc));
}

Result<Alert> alert_from_json(const JsonField& field) {
  const JsonField doc = KW_TRY(field.object());
  Alert a;
  a.id = AlertId(KW_TRY(doc["id"].string()));
  a.key.benchmark = KW_TRY(doc["benchmark"].string());
  a.key.provider = KW_TRY(doc["provider"].string());
  a.key.workload = KW_TRY(doc["workload"].string());
  a.key.environment = KW_TRY(doc["environment"].string());
  a.key.protocol = KW_TRY(doc["protocol"].string_or(""));
  a.kind = KW_TRY(doc["kind"].parsed(parse_alert_kind));
  a.direction = KW_TRY(doc["direction"].parsed(parse_direction));
  a.state = KW_TRY(doc["state"].parsed(parse_alert_state));
  a.fired = KW_TRY(run_from_json(doc, "externalId", "observedAt", "median"));
  // Failed alerts and documents of kernelwatch 0.1 may lack the onset: it is the firing run.
  a.onset = doc["onsetExternalId"].present()
                ? KW_TRY(run_from_json(doc, "onsetExternalId", "onsetObservedAt", "onsetMedian"))
                : a.fired;
  if (const JsonField closed = doc["closedBy"]; closed.present()) {
    KW_TRY(closed.object());
    a.closed_by = KW_TRY(run_from_json(closed, "externalId", "observedAt", "median"));
  }
  if (const JsonField band = doc["band"]; band.present()) {
    KW_TRY(band.object());
    a.band.lower = std::chrono::nanoseconds{KW_TRY(band["lower"].integer())};
    a.band.upper = std::chrono::nanoseconds{KW_TRY(band["upper"].integer())};
    a.band.center = std::chrono::nanoseconds{KW_TRY(band["center"].integer_or(0))};
  }
  a.baseline_runs = static_cast<std::size_t>(KW_TRY(doc["baselineRuns"].integer_or(0)));
  a.relative_change = KW_TRY(doc["relativeChange"].number_or(0));
  a.attribution = KW_TRY(attribution_from_json(doc["attribution"]));
  a.explanation = KW_TRY(doc["explanation"].string_or(""));
  a.incident = AlertId(KW_TRY(doc["incident"].string_or("")));
  if (const JsonField members = doc["members"]; members.present()) {
    for (const JsonField& member : KW_TRY(members.array())) {
      a.members.push_back(KW_TRY(alert_from_json(member)));
    }
  }
  if (const JsonField placement = doc["placement"]; placement.present()) {
    KW_TRY(placement.object());
    a.placement.host = KW_TRY(placement["host"].string_or(""));
    a.placement.gpu = KW_TRY(placement["gpu"].string_or(""));
    a.placement.gpu_uuid = KW_TRY(placement["uuid"].string_or(""));
    a.placement.pci_bus_id = KW_TRY(placement["pciBusId"].string_or(""));
  }
  return a;
}

std::string_view to_string(OperatorAction action) noexcept {
  return action == OperatorAction::Rebaseline ? "rebaseline" : "acknowledge";
}

std::optional<OperatorAction> parse_operator_action(std::string_view text) noexcept {
  if (text == "acknowledge") return OperatorAction::Acknowledge;
  if (text == "rebaseline") return OperatorAction::Rebaseline;
  return std::nullopt;
}

std::string AlertId::short_form() const {
  if (long_.empty()) return {};
  return sha256_hex(long_).substr(0, kShortAlertIdLength);
}

bool AlertRef::is_short() const noexcept {
  return text_.size() == kShortAlertIdLength && std::all_of(text_.begin(), text_.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool AlertRef::names(const AlertId& id) const {
  return is_short() ? id.short_form() == text_ : id.long_form() == text_;
}

}  // namespace kernelwatch::core
