// Watch::decide_by_fleet(): the fleet rule (detectors/fleet.hpp) over a close's held steps.
#include <algorithm>
#include <tuple>

#include "detectors/statistics.hpp"
#include "detectors/watch.hpp"

namespace kernelwatch::detectors {

void Watch::decide_by_fleet(std::span<const HeldStep> steps, std::vector<StepDecision>& decisions) {
  struct Alone {
    std::size_t step = 0;
    FleetComparison comparison;
  };
  using HostOf = std::pair<std::string, std::string>;  // environment, host
  std::map<HostOf, std::size_t> compared;              // steps the fleet's runs compared
  std::map<std::tuple<std::string, std::string, Direction>, std::vector<Alone>> alone;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Trigger& trigger = *steps[i].trigger;
    if (trigger.kind != AlertKind::Step || trigger.run.placement.empty()) continue;
    const std::string& host = trigger.run.placement->host;
    if (host.empty()) continue;
    const auto runs = fleet_.for_step(steps[i].key->identity(), trigger.run.observed_at);
    if (runs.empty()) continue;
    const FleetComparison comparison =
        compare_with_fleet(host, trigger, runs, parameters_.controls);
    if (!comparison.compared) continue;
    const std::string& environment = steps[i].key->environment;
    ++compared[{environment, host}];
    if (comparison.alone) alone[{environment, host, trigger.direction}].push_back({i, comparison});
  }

  for (const auto& [group, members] : alone) {
    const auto& [environment, host, direction] = group;
    core::Timestamp onset = steps[members.front().step].trigger->onset.observed_at;
    std::size_t others = 0;
    std::vector<double> against;
    for (const auto& member : members) {
      onset = std::min(onset, steps[member.step].trigger->onset.observed_at);
      others = std::max(others, member.comparison.hosts);
      against.push_back(member.comparison.against_fleet);
    }
    // Most of the keys the host judged in the cycle: the steps the fleet compared, and the keys
    // that did not move.
    const std::size_t judged =
        compared.at({environment, host}) + controls_.unmoved_keys(environment, onset);
    const std::size_t out = members.size();
    if (2 * out <= judged ||
        out < std::min<std::size_t>(
                  std::max<std::size_t>(parameters_.controls.incident_min_keys, 1), judged)) {
      continue;
    }
    core::Placement placement;
    placement.host = host;
    const core::AlertId id(environment + "@" + core::UnitId::host_of(placement).str() + "@" +
                           core::format_timestamp(onset));
    const double change = median(against);
    HostIncident incident;
    incident.placement = placement;
    incident.against_fleet = change;
    incident.text = "host " + host + "'s runs are " + core::format_change(change) +
                    " against those of " + std::to_string(others) +
                    " other host(s) of its fleet on " + std::to_string(out) + " of " +
                    std::to_string(judged) + " benchmarks it ran in the cycle of " +
                    core::format_timestamp(onset) +
                    ": the host, not the code (the other hosts ran the same implementation and "
                    "stayed where they were, storage.fleet_controls); no key alert is raised.";
    host_incidents_[id] = std::move(incident);
    for (const auto& member : members) {
      StepDecision& decision = decisions[member.step];
      decision.own_reason.clear();
      decision.incident = EnvironmentReason{
          id, "its host moved alone: " + core::format_change(member.comparison.against_fleet) +
                  " against the other hosts' runs of it (" +
                  std::to_string(member.comparison.moved) + " of " +
                  std::to_string(member.comparison.hosts) + " moved its way)"};
    }
  }
}

}  // namespace kernelwatch::detectors
