#include "detectors/backtest.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace kernelwatch::detectors {

bool KeyFilter::matches(const KeyLabels& key) const {
  return (benchmark.empty() || benchmark == key.benchmark) &&
         (provider.empty() || provider == key.provider) &&
         (workload.empty() || workload == key.workload) &&
         (environment.empty() || environment == key.environment);
}

core::Result<ConfirmPolicy> parse_confirm_policy(std::string_view text) {
  if (text == "none") return ConfirmPolicy::None;
  if (text == "next") return ConfirmPolicy::Next;
  return core::fail(core::ErrorCode::InvalidArgument,
                    "--confirm: expected \"none\" or \"next\", got \"" + std::string(text) + "\"");
}

std::vector<Alert> backtest(const std::vector<KeyHistory>& histories,
                            const BacktestOptions& options) {
  std::vector<Alert> alerts;
  std::vector<KeyVerdicts> verdicts;
  verdicts.reserve(histories.size());
  for (const auto& history : histories) {
    std::vector<const Observation*> runs;
    runs.reserve(history.runs.size());
    for (const auto& run : history.runs) runs.push_back(&run);
    std::stable_sort(runs.begin(), runs.end(), [](const Observation* a, const Observation* b) {
      return a->observed_at < b->observed_at;
    });
    KeyMonitor monitor(history.key, options.parameters);
    KeyVerdicts key_verdicts{history.key, {}};
    key_verdicts.runs.reserve(runs.size());
    std::map<std::string, std::size_t> index_of;
    for (const Observation* run : runs) {
      auto step = monitor.observe(*run);
      key_verdicts.runs.push_back({run->observed_at, step.detection.verdict.kind});
      if (step.fired) {
        index_of[step.fired->id] = alerts.size();
        alerts.push_back(std::move(*step.fired));
      }
      for (const auto& event : step.events) {
        const auto it = index_of.find(event.alert_id);
        if (it == index_of.end() || event.notify == Notify::Fired) continue;
        alerts[it->second].state = event.to;
        alerts[it->second].closed_by_external_id = event.cause;
      }
    }
    verdicts.push_back(std::move(key_verdicts));
  }
  apply_controls(alerts, verdicts, options.parameters.controls);
  std::vector<Alert> selected;
  for (auto& alert : alerts) {
    if (options.filter.matches(alert.key)) selected.push_back(std::move(alert));
  }
  std::stable_sort(selected.begin(), selected.end(), [](const Alert& a, const Alert& b) {
    if (a.observed_at != b.observed_at) return a.observed_at < b.observed_at;
    return a.key.display() < b.key.display();
  });
  return selected;
}

nlohmann::json to_json(const Alert& alert) {
  nlohmann::json attribution = nlohmann::json::array();
  for (const auto& change : alert.attribution) {
    attribution.push_back({{"field", change.field}, {"from", change.from}, {"to", change.to}});
  }
  return nlohmann::json{
      {"benchmark", alert.key.benchmark},
      {"provider", alert.key.provider},
      {"workload", alert.key.workload},
      {"environment", alert.key.environment},
      {"externalId", alert.external_id},
      {"observedAt", core::format_timestamp(alert.observed_at)},
      {"direction", std::string(to_string(alert.direction))},
      {"kind", std::string(to_string(alert.kind))},
      {"relativeChange", alert.relative_change},
      {"median", alert.median.count()},
      {"band", {{"lower", alert.band.lower.count()}, {"upper", alert.band.upper.count()}}},
      {"baselineRuns", alert.baseline_runs},
      {"attribution", attribution},
      {"onsetExternalId", alert.onset_external_id},
      {"onsetObservedAt", core::format_timestamp(alert.onset_observed_at)},
      {"incident",
       alert.incident.empty() ? nlohmann::json(nullptr) : nlohmann::json(alert.incident)},
      {"state", std::string(to_string(alert.state))},
      {"explanation", alert.explanation},
  };
}

nlohmann::json to_json(const std::vector<Alert>& alerts) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& alert : alerts) array.push_back(to_json(alert));
  return array;
}

std::string format_alert_line(const Alert& alert) {
  char change[32];
  std::snprintf(change, sizeof change, "%+.1f%%", alert.relative_change * 100);
  std::string attribution = alert.attribution.empty() ? "-" : describe(alert.attribution);
  return core::format_timestamp(alert.observed_at).substr(0, 19) + "  " +
         std::string(to_string(alert.direction)) + "  " + std::string(to_string(alert.kind)) +
         "  " + change + "  " + alert.key.display() + "  median " +
         format_duration(static_cast<double>(alert.median.count())) + " band [" +
         format_duration(static_cast<double>(alert.band.lower.count())) + ", " +
         format_duration(static_cast<double>(alert.band.upper.count())) +
         "] n=" + std::to_string(alert.baseline_runs) + "  " + attribution + "  [" +
         std::string(to_string(alert.state)) + "]";
}

std::string format_alert_table(const std::vector<Alert>& alerts) {
  std::string text =
      "observedAt           direction  kind  change  key  median band baselineRuns  "
      "attribution  [final state]\n";
  std::set<std::string> printed_incidents;
  for (const auto& alert : alerts) {
    if (!alert.incident.empty()) {
      if (!printed_incidents.insert(alert.incident).second) continue;
      std::size_t members = 0;
      for (const auto& other : alerts) members += other.incident == alert.incident ? 1 : 0;
      text += "incident " + alert.incident + ": " + std::to_string(members) + " key(s)\n";
      for (const auto& other : alerts) {
        if (other.incident == alert.incident) text += "  " + format_alert_line(other) + "\n";
      }
      continue;
    }
    text += format_alert_line(alert) + "\n";
  }
  text += std::to_string(alerts.size()) + " alert(s)\n";
  return text;
}

}  // namespace kernelwatch::detectors
