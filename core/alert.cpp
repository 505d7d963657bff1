#include "core/alert.hpp"

#include <array>
#include <utility>

namespace kernelwatch::core {
namespace {

using nlohmann::json;

template <class Enum, std::size_t N>
Result<Enum> parse_name(std::string_view what, std::string_view text,
                        const std::array<Enum, N>& values) {
  std::string allowed;
  for (Enum value : values) {
    if (to_string(value) == text) return value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(value));
  }
  return fail(ErrorCode::ParseError,
              std::string(what) + " \"" + std::string(text) + "\" is not one of " + allowed);
}

json run_json(const AlertRun& run) {
  return json{{"externalId", run.external_id},
              {"observedAt", format_timestamp(run.observed_at)},
              {"median", run.median.count()}};
}

// Reads the alert document's fields, naming the first that is missing or of the wrong type.
class Fields {
 public:
  explicit Fields(const json& doc) : doc_(doc) {}

  template <class T>
  Result<T> get(const char* name) const {
    const auto it = doc_.find(name);
    if (it == doc_.end()) return fail(ErrorCode::ParseError, std::string(name) + " is missing");
    if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string())
        return fail(ErrorCode::ParseError, std::string(name) + " must be a string");
      return it->get<std::string>();
    } else if constexpr (std::is_same_v<T, double>) {
      if (!it->is_number())
        return fail(ErrorCode::ParseError, std::string(name) + " must be a number");
      return it->get<double>();
    } else {
      if (!it->is_number_integer())
        return fail(ErrorCode::ParseError, std::string(name) + " must be an integer");
      return it->get<T>();
    }
  }
  Result<Timestamp> time(const char* name) const {
    auto text = KW_TRY(get<std::string>(name));
    auto parsed = parse_timestamp(text);
    if (!parsed) return tl::unexpected(parsed.error().with_context(name));
    return *parsed;
  }
  // An integer that may be absent (documents of older versions, failed runs): 0 then.
  Result<std::int64_t> optional_integer(const char* name) const {
    if (!doc_.contains(name)) return std::int64_t{0};
    return get<std::int64_t>(name);
  }
  Result<AlertRun> run(const char* id, const char* at, const char* median) const {
    AlertRun out;
    out.external_id = KW_TRY(get<std::string>(id));
    out.observed_at = KW_TRY(time(at));
    out.median = std::chrono::nanoseconds{KW_TRY(optional_integer(median))};
    return out;
  }

 private:
  const json& doc_;
};

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

Result<AlertKind> parse_alert_kind(std::string_view text) {
  return parse_name(
      "alert kind", text,
      std::array{AlertKind::Step, AlertKind::Drift, AlertKind::Environment, AlertKind::Failed});
}
Result<Direction> parse_direction(std::string_view text) {
  return parse_name("direction", text, std::array{Direction::Regression, Direction::Improvement});
}
Result<AlertState> parse_alert_state(std::string_view text) {
  return parse_name("alert state", text,
                    std::array{AlertState::Firing, AlertState::Acknowledged, AlertState::Resolved,
                               AlertState::Rebaselined});
}
Result<Notice> parse_notice(std::string_view text) {
  return parse_name("notice", text, std::array{Notice::Firing, Notice::Resolved});
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
  return json{
      {"id", alert.id},
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
      {"incident", alert.incident.empty() ? json(nullptr) : json(alert.incident)},
      {"members", members_json(alert.members)},
  };
}

Result<Alert> alert_from_json(const json& doc) {
  if (!doc.is_object()) return fail(ErrorCode::ParseError, "an alert must be a JSON object");
  const Fields f(doc);
  Alert a;
  a.id = KW_TRY(f.get<std::string>("id"));
  a.key.benchmark = KW_TRY(f.get<std::string>("benchmark"));
  a.key.provider = KW_TRY(f.get<std::string>("provider"));
  a.key.workload = KW_TRY(f.get<std::string>("workload"));
  a.key.environment = KW_TRY(f.get<std::string>("environment"));
  a.key.protocol = doc.value("protocol", std::string());
  a.kind = KW_TRY(parse_alert_kind(KW_TRY(f.get<std::string>("kind"))));
  a.direction = KW_TRY(parse_direction(KW_TRY(f.get<std::string>("direction"))));
  a.state = KW_TRY(parse_alert_state(KW_TRY(f.get<std::string>("state"))));
  a.fired = KW_TRY(f.run("externalId", "observedAt", "median"));
  // Failed alerts and documents of kernelwatch 0.1 may lack the onset: it is the firing run.
  a.onset = doc.contains("onsetExternalId")
                ? KW_TRY(f.run("onsetExternalId", "onsetObservedAt", "onsetMedian"))
                : a.fired;
  if (const auto closed = doc.find("closedBy"); closed != doc.end() && !closed->is_null()) {
    const Fields c(*closed);
    auto run = c.run("externalId", "observedAt", "median");
    if (!run) return tl::unexpected(run.error().with_context("closedBy"));
    a.closed_by = std::move(*run);
  }
  if (const auto band = doc.find("band"); band != doc.end() && band->is_object()) {
    const Fields b(*band);
    a.band.lower = std::chrono::nanoseconds{KW_TRY(b.get<std::int64_t>("lower"))};
    a.band.upper = std::chrono::nanoseconds{KW_TRY(b.get<std::int64_t>("upper"))};
    a.band.center = std::chrono::nanoseconds{band->value("center", std::int64_t{0})};
  }
  a.baseline_runs = static_cast<std::size_t>(KW_TRY(f.optional_integer("baselineRuns")));
  if (doc.contains("relativeChange")) a.relative_change = KW_TRY(f.get<double>("relativeChange"));
  if (const auto changes = doc.find("attribution"); changes != doc.end() && changes->is_array()) {
    for (const auto& change : *changes) {
      const Fields c(change);
      a.attribution.push_back({KW_TRY(c.get<std::string>("field")),
                               KW_TRY(c.get<std::string>("from")),
                               KW_TRY(c.get<std::string>("to"))});
    }
  }
  a.explanation = doc.value("explanation", std::string());
  if (const auto incident = doc.find("incident"); incident != doc.end() && incident->is_string()) {
    a.incident = incident->get<std::string>();
  }
  if (const auto members = doc.find("members"); members != doc.end() && members->is_array()) {
    for (const auto& member : *members) {
      auto parsed = alert_from_json(member);
      if (!parsed) return tl::unexpected(parsed.error().with_context("members"));
      a.members.push_back(std::move(*parsed));
    }
  }
  return a;
}

}  // namespace kernelwatch::core
