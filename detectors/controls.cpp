#include "detectors/controls.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace kernelwatch::detectors {
namespace {

// Start times of the cycles of one environment, ascending.
using Cycles = std::vector<core::Timestamp>;

std::size_t cycle_of(const Cycles& starts, core::Timestamp t) {
  const auto it = std::upper_bound(starts.begin(), starts.end(), t);
  return it == starts.begin() ? 0 : static_cast<std::size_t>(it - starts.begin() - 1);
}

struct Tally {
  std::size_t judged = 0;
  std::size_t regressions = 0;
  std::size_t improvements = 0;
};

}  // namespace

void apply_controls(std::span<Alert> alerts, std::span<const KeyVerdicts> verdicts,
                    const ControlParameters& controls) {
  // Cycles per environment from every run time.
  std::map<std::string, std::vector<core::Timestamp>> times;
  for (const auto& key : verdicts) {
    for (const auto& run : key.runs) times[key.key.environment].push_back(run.observed_at);
  }
  std::map<std::string, Cycles> cycles;
  for (auto& [environment, list] : times) {
    std::sort(list.begin(), list.end());
    Cycles starts;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i == 0 || list[i] - list[i - 1] > controls.cycle_gap) starts.push_back(list[i]);
    }
    cycles[environment] = std::move(starts);
  }

  // Per environment and cycle: keys judged and keys breaching each way. Per key and cycle: the
  // directions it breached (for the reference-provider rule).
  std::map<std::pair<std::string, std::size_t>, Tally> tallies;
  using KeyCycle = std::tuple<std::string, std::string, std::string, std::string, std::size_t>;
  std::map<KeyCycle, std::set<Direction>> breaches;  // benchmark, workload, env, provider, cycle
  for (const auto& key : verdicts) {
    const auto& starts = cycles[key.key.environment];
    std::map<std::size_t, std::set<VerdictKind>> per_cycle;
    for (const auto& run : key.runs) per_cycle[cycle_of(starts, run.observed_at)].insert(run.kind);
    for (const auto& [cycle, kinds] : per_cycle) {
      auto& tally = tallies[{key.key.environment, cycle}];
      const bool regression = kinds.contains(VerdictKind::Regression);
      const bool improvement = kinds.contains(VerdictKind::Improvement);
      // Every key with a judgeable run counts, young ones too: "most keys" must be most of
      // the environment, not most of the few keys old enough to have a band.
      if (kinds.size() > 1 || !kinds.contains(VerdictKind::Inconclusive)) ++tally.judged;
      if (regression) ++tally.regressions;
      if (improvement) ++tally.improvements;
      auto& directions = breaches[{key.key.benchmark, key.key.workload, key.key.environment,
                                   key.key.provider, cycle}];
      if (regression) directions.insert(Direction::Regression);
      if (improvement) directions.insert(Direction::Improvement);
    }
  }

  const auto is_reference = [&](const std::string& provider) {
    return std::find(controls.reference_providers.begin(), controls.reference_providers.end(),
                     provider) != controls.reference_providers.end();
  };
  const auto incident_of = [&](const Alert& alert, std::size_t cycle) {
    return alert.key.environment + "@" +
           core::format_timestamp(cycles[alert.key.environment][cycle]) + "/" +
           std::string(to_string(alert.direction));
  };

  // Subjects whose reference moved the same way: (benchmark, workload, env, cycle, direction).
  std::set<std::tuple<std::string, std::string, std::string, std::size_t, Direction>> shared;
  for (auto& alert : alerts) {
    if (alert.kind != AlertKind::Step) continue;
    const auto& starts = cycles[alert.key.environment];
    if (starts.empty()) continue;
    const std::size_t cycle = cycle_of(starts, alert.onset.observed_at);
    const auto& tally = tallies[{alert.key.environment, cycle}];
    const std::size_t same_way =
        alert.direction == Direction::Regression ? tally.regressions : tally.improvements;
    const bool most_keys = same_way >= controls.environment_min_keys &&
                           static_cast<double>(same_way) >=
                               controls.environment_fraction * static_cast<double>(tally.judged);
    bool reference_moved = false;
    if (!is_reference(alert.key.provider)) {
      for (const auto& provider : controls.reference_providers) {
        const auto it = breaches.find(
            {alert.key.benchmark, alert.key.workload, alert.key.environment, provider, cycle});
        if (it != breaches.end() && it->second.contains(alert.direction)) reference_moved = true;
      }
    }
    if (!most_keys && !reference_moved) continue;
    alert.kind = AlertKind::Environment;
    alert.incident = incident_of(alert, cycle);
    alert.explanation += most_keys
                             ? "; environment: " + std::to_string(same_way) + " of " +
                                   std::to_string(tally.judged) +
                                   " keys on this environment moved the same way in this cycle"
                             : "; environment: the reference provider moved the same way "
                               "in this cycle";
    if (reference_moved) {
      shared.insert(
          {alert.key.benchmark, alert.key.workload, alert.key.environment, cycle, alert.direction});
    }
  }
  // The reference's own alert belongs to the incident its subject was folded into.
  for (auto& alert : alerts) {
    if (alert.kind != AlertKind::Step || !is_reference(alert.key.provider)) continue;
    const auto& starts = cycles[alert.key.environment];
    if (starts.empty()) continue;
    const std::size_t cycle = cycle_of(starts, alert.onset.observed_at);
    if (!shared.contains({alert.key.benchmark, alert.key.workload, alert.key.environment, cycle,
                          alert.direction})) {
      continue;
    }
    alert.kind = AlertKind::Environment;
    alert.incident = incident_of(alert, cycle);
    alert.explanation += "; environment: a subject provider moved the same way in this cycle";
  }
}

}  // namespace kernelwatch::detectors
