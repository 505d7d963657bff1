#include "detectors/backtest.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "core/digest.hpp"
#include "core/names.hpp"
#include "detectors/watch.hpp"

namespace kernelwatch::detectors {
namespace {

// A GPU or host out of line with its siblings: no key, no members, not an incident's member.
bool is_unit_alert(const Alert& alert) {
  return !alert.placement.empty() && alert.members.empty() && alert.incident.empty();
}

// "; out of line on: <key>, <key>, <key> and 6 more" (each key without its environment, which
// is the alert's), "" for none.
std::string some_keys(const std::vector<KeyLabels>& keys) {
  constexpr std::size_t kShown = 3;
  if (keys.empty()) return "";
  std::string text = "; out of line on: ";
  for (std::size_t i = 0; i < keys.size() && i < kShown; ++i) {
    text +=
        (i == 0 ? "" : ", ") + keys[i].benchmark + " " + keys[i].provider + " " + keys[i].workload;
  }
  if (keys.size() > kShown) text += " and " + std::to_string(keys.size() - kShown) + " more";
  return text;
}

}  // namespace

bool KeyFilter::matches(const KeyLabels& key) const {
  return (benchmark.empty() || benchmark == key.benchmark) &&
         (provider.empty() || provider == key.provider) &&
         (workload.empty() || workload == key.workload) &&
         (environment.empty() || environment == key.environment);
}

bool KeyFilter::selects(const Alert& alert) const {
  const auto any = [&](const auto& range, auto key_of) {
    return std::any_of(range.begin(), range.end(),
                       [&](const auto& x) { return matches(key_of(x)); });
  };
  return matches(alert.key) ||
         any(alert.members, [](const Alert& member) -> const KeyLabels& { return member.key; }) ||
         any(alert.keys, [](const KeyLabels& key) -> const KeyLabels& { return key; });
}

std::string_view to_string(ConfirmPolicy policy) noexcept {
  return policy == ConfirmPolicy::None ? "none" : "next";
}

core::Result<ConfirmPolicy> parse_confirm_policy(std::string_view text) {
  static constexpr ConfirmPolicy kValues[] = {ConfirmPolicy::None, ConfirmPolicy::Next};
  return core::parse_name("confirm policy", text, kValues);
}

Backtest::Backtest(BacktestOptions options)
    : options_(std::move(options)), watch_(options_.parameters) {}

void Backtest::apply(std::vector<AlertEvent> events) {
  for (auto& event : events) {
    // A member is listed inside its incident, which every change of the member updates.
    if (core::is_incident_member(event.alert)) continue;
    const auto [it, fresh] = index_of_.try_emplace(event.alert.id, alerts_.size());
    if (fresh) {
      alerts_.push_back(std::move(event.alert));
    } else {
      alerts_[it->second] = std::move(event.alert);
    }
  }
}

void Backtest::observe(const KeyLabels& key, const Observation& run) {
  // A gap longer than a cycle closes the cycle before it.
  if (previous_ && run.observed_at - *previous_ > options_.parameters.controls.cycle_gap) {
    apply(watch_.close_cycle());
  }
  apply(watch_.observe(key, run, options_.parameters.confirm).events);
  previous_ = run.observed_at;
}

std::vector<Alert> Backtest::finish() {
  apply(watch_.close_cycle());
  std::vector<Alert> selected;
  for (auto& alert : alerts_) {
    if (options_.filter.selects(alert)) selected.push_back(std::move(alert));
  }
  alerts_.clear();
  index_of_.clear();
  std::stable_sort(selected.begin(), selected.end(), [](const Alert& a, const Alert& b) {
    if (a.fired.observed_at != b.fired.observed_at)
      return a.fired.observed_at < b.fired.observed_at;
    return a.key.display() < b.key.display();
  });
  return selected;
}

std::vector<Alert> backtest(const std::vector<KeyHistory>& histories,
                            const BacktestOptions& options) {
  // Every run of every key in observedAt order (a key's own runs keep their order on ties).
  struct Item {
    const KeyHistory* history;
    const Observation* run;
  };
  std::vector<Item> items;
  for (const auto& history : histories) {
    for (const auto& run : history.runs) items.push_back({&history, &run});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.run->observed_at < b.run->observed_at;
  });
  Backtest replay(options);
  for (const auto& item : items) replay.observe(item.history->key, *item.run);
  return replay.finish();
}

nlohmann::json to_json(const std::vector<Alert>& alerts) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& alert : alerts) {
    nlohmann::json doc = core::to_json(alert);
    if (is_unit_alert(alert)) {
      doc["unit"] = alert.placement.unit().empty() ? "host" : "gpu";
      nlohmann::json keys = nlohmann::json::array();
      for (const auto& key : alert.keys) {
        keys.push_back(
            {{"benchmark", key.benchmark}, {"provider", key.provider}, {"workload", key.workload}});
      }
      doc["keys"] = std::move(keys);
    }
    array.push_back(std::move(doc));
  }
  return array;
}

std::string format_alert_line(const Alert& alert) {
  const std::string change = core::format_change(alert.relative_change);
  if (is_unit_alert(alert)) {
    // A GPU or host out of line (siblings.hpp): no key, no band; what it is says its line.
    return core::format_timestamp(alert.fired.observed_at).substr(0, 19) + "  " +
           std::string(to_string(alert.direction)) + "  " + std::string(to_string(alert.kind)) +
           "  " + change + "  " + alert.key.environment + "  " + alert.explanation +
           some_keys(alert.keys) + "  [" + std::string(to_string(alert.state)) + "]";
  }
  auto changes = alert.attribution;
  for (auto& c : changes) {
    c.from = core::short_digest(c.from);
    c.to = core::short_digest(c.to);
  }
  std::string attribution = changes.empty() ? "-" : describe(changes);
  return core::format_timestamp(alert.fired.observed_at).substr(0, 19) + "  " +
         std::string(to_string(alert.direction)) + "  " + std::string(to_string(alert.kind)) +
         "  " + change + "  " + alert.key.display() + "  median " +
         core::format_latency(alert.fired.median) + " band [" +
         core::format_latency(alert.band.lower) + ", " + core::format_latency(alert.band.upper) +
         "] n=" + std::to_string(alert.baseline_runs) + "  " + attribution + "  [" +
         std::string(to_string(alert.state)) + "]";
}

std::string format_alert_table(const std::vector<Alert>& alerts) {
  std::string text =
      "observedAt           direction  kind  change  key  median band baselineRuns  "
      "attribution  [final state]\n";
  std::size_t incidents = 0;
  for (const auto& alert : alerts) {
    if (alert.members.empty()) {
      text += format_alert_line(alert) + "\n";
      continue;
    }
    ++incidents;
    text += "incident " + alert.id.long_form() + ": " + std::to_string(alert.members.size()) +
            " key(s)\n";
    for (const auto& member : alert.members) text += "  " + format_alert_line(member) + "\n";
  }
  text += std::to_string(alerts.size() - incidents) + " alert(s), " + std::to_string(incidents) +
          " environment incident(s)\n";
  return text;
}

}  // namespace kernelwatch::detectors
