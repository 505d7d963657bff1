#include "detectors/controls.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {

core::AlertId incident_id(const std::string& environment, core::Timestamp start) {
  return core::AlertId(environment + "@" + core::format_timestamp(start));
}

Controls::Controls(ControlParameters parameters) : parameters_(std::move(parameters)) {}

bool Controls::is_reference(const std::string& provider) const {
  return std::find(parameters_.reference_providers.begin(), parameters_.reference_providers.end(),
                   provider) != parameters_.reference_providers.end();
}

std::size_t Controls::unmoved_keys(const std::string& environment, core::Timestamp at) const {
  const Cycle* cycle = cycle_of(environment, at);
  if (cycle == nullptr) return 0;
  return static_cast<std::size_t>(
      std::count_if(cycle->rows.begin(), cycle->rows.end(),
                    [](const auto& row) { return row.second.center > 0 && !row.second.moved; }));
}

void Controls::record(const KeyLabels& key, const Observation& run, const Verdict& verdict) {
  if (!run.judgeable()) return;
  auto& cycles = cycles_[key.environment];
  if (cycles.empty() || run.observed_at - cycles.back().newest > parameters_.cycle_gap) {
    cycles.push_back(Cycle{run.observed_at, run.observed_at, {}});
    while (cycles.size() > std::max<std::size_t>(parameters_.kept_cycles, 1)) cycles.pop_front();
  }
  Cycle& cycle = cycles.back();
  cycle.newest = std::max(cycle.newest, run.observed_at);
  std::string identity = key.identity();
  const auto [known, first] = known_.insert(identity);
  if (first) {  // a key's first run: it joins its subject's keys
    same_work_[{key.benchmark, key.workload, key.environment}].push_back(identity);
  }
  Row row;
  row.reference = is_reference(key.provider);
  row.provider = key.provider;
  if (verdict.has_band) {
    row.center = static_cast<double>(verdict.band.center.count());
    row.relative_change = verdict.relative_change;
    const double threshold = parameters_.moved_threshold;
    if (verdict.kind == VerdictKind::Regression || row.relative_change >= threshold) {
      row.moved = Direction::Regression;
    } else if (verdict.kind == VerdictKind::Improvement || row.relative_change <= -threshold) {
      row.moved = Direction::Improvement;
    }
  }
  if (!run.placement.empty() && run.median.count() > 0) {
    Placed& placed = placed_[key.environment];
    if (placed.runs.empty()) placed.start = run.observed_at;
    placed.newest = std::max(placed.newest, run.observed_at);
    // Views of the identity kept in known_ and of the placement kept once in placements_.
    const auto [where, fresh_address] = by_address_.try_emplace(run.placement.address());
    if (fresh_address) {
      where->second = Kept{run.placement, &*placements_.insert(*run.placement).first};
    }
    placed.runs.push_back(PlacedRun{*known, where->second.once,
                                    static_cast<double>(run.median.count()), row.moved,
                                    run.observed_at});
  }
  cycle.rows[identity] = std::move(row);
}

std::vector<Controls::PlacedCycle> Controls::placed_cycles() const {
  std::vector<PlacedCycle> out;
  for (const auto& [environment, placed] : placed_) {
    if (placed.runs.empty()) continue;
    out.push_back({environment, placed.start, placed.newest, placed.runs});
  }
  return out;
}

const Controls::Cycle* Controls::cycle_of(const std::string& environment,
                                          core::Timestamp at) const {
  const auto it = cycles_.find(environment);
  if (it == cycles_.end()) return nullptr;
  for (auto cycle = it->second.rbegin(); cycle != it->second.rend(); ++cycle) {
    if (cycle->start <= at) return at <= cycle->newest ? &*cycle : nullptr;
  }
  return nullptr;  // older than every kept cycle
}

std::string Controls::paired_reason(const KeyLabels& key, const Trigger& trigger,
                                    const Cycle& cycle) const {
  const Row& me = cycle.rows.at(key.identity());
  const Direction way = trigger.direction;
  const double my_move = std::log1p(me.relative_change);

  // The other role on the same benchmark, workload and environment moved too.
  const auto subjects = same_work_.find({key.benchmark, key.workload, key.environment});
  if (subjects != same_work_.end()) {
    for (const auto& other_identity : subjects->second) {
      if (other_identity == key.identity()) continue;
      const auto other = cycle.rows.find(other_identity);
      if (other == cycle.rows.end()) continue;
      const Row& them = other->second;
      if (them.reference == me.reference || them.center <= 0 || them.moved != way) continue;
      if (me.reference) {
        return "its subject " + them.provider + " moved the same way (" +
               core::format_change(them.relative_change) +
               ") in this cycle: a benchmark or host change";
      }
      const double ratio = my_move - std::log1p(them.relative_change);
      if (std::abs(ratio) <= std::log1p(margin_to(trigger.verdict.band, way))) {
        return "its reference " + them.provider + " moved the same way (" +
               core::format_change(them.relative_change) + ") and the ratio to it changed only " +
               core::format_change(std::expm1(ratio));
      }
    }
  }
  if (!me.reference) return "";

  // A host shift: references of comparable duration moved with this one.
  const double needed = parameters_.host_share * std::abs(my_move);
  std::size_t comparable = 0;
  std::size_t same_way = 0;
  for (const auto& [identity, row] : cycle.rows) {
    if (identity == key.identity() || !row.reference || row.center <= 0) continue;
    if (std::max(row.center / me.center, me.center / row.center) >
        parameters_.host_duration_ratio) {
      continue;
    }
    ++comparable;
    const double move = std::log1p(row.relative_change);
    same_way += way == Direction::Regression ? move >= needed : move <= -needed;
  }
  if (same_way >= parameters_.host_min_keys &&
      static_cast<double>(same_way) >=
          parameters_.host_fraction * static_cast<double>(comparable)) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", parameters_.host_duration_ratio);
    return std::to_string(same_way) + " of " + std::to_string(comparable) + " references within " +
           ratio + "x of its duration moved the same way in " + "this cycle: a host shift";
  }
  return "";
}

std::optional<double> Controls::excess_over_reference(const KeyLabels& key, Direction way,
                                                      const Cycle& cycle,
                                                      std::string* reference) const {
  const Row& me = cycle.rows.at(key.identity());
  if (me.reference) return std::nullopt;
  const auto subjects = same_work_.find({key.benchmark, key.workload, key.environment});
  if (subjects == same_work_.end()) return std::nullopt;
  const double sign = way == Direction::Regression ? 1.0 : -1.0;
  std::optional<double> least;
  for (const auto& identity : subjects->second) {
    const auto other = cycle.rows.find(identity);
    if (other == cycle.rows.end() || !other->second.reference || other->second.center <= 0) {
      continue;
    }
    const double excess =
        sign * (std::log1p(me.relative_change) - std::log1p(other->second.relative_change));
    if (!least || excess < *least) {
      least = excess;
      if (reference != nullptr) {
        *reference =
            other->second.provider + " " + core::format_change(other->second.relative_change);
      }
    }
  }
  return least;
}

std::vector<StepDecision> Controls::decide(
    std::span<const HeldStep> steps,
    const std::function<std::size_t(const core::AlertId&)>& members_before) const {
  std::vector<StepDecision> decisions(steps.size());
  // The steps of each environment's cycle; drift and steps of forgotten cycles are their own.
  std::map<core::AlertId, std::vector<std::size_t>> groups;
  std::map<core::AlertId, const Cycle*> cycle_by_id;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const KeyLabels& key = *steps[i].key;
    const Trigger& trigger = *steps[i].trigger;
    if (trigger.kind != AlertKind::Step) continue;
    const Cycle* cycle = cycle_of(key.environment, trigger.onset.observed_at);
    if (cycle == nullptr) continue;
    const auto mine = cycle->rows.find(key.identity());
    if (mine == cycle->rows.end() || mine->second.center <= 0) continue;
    const core::AlertId id = incident_id(key.environment, cycle->start);
    groups[id].push_back(i);
    cycle_by_id[id] = cycle;
    if (auto why = paired_reason(key, trigger, *cycle); !why.empty()) {
      decisions[i].incident = EnvironmentReason{id, std::move(why)};
    }
  }

  for (const auto& [id, members] : groups) {
    const std::size_t stepped = members.size() + members_before(id);
    if (stepped < std::max<std::size_t>(parameters_.incident_min_keys, 1)) continue;
    const Cycle& cycle = *cycle_by_id.at(id);
    // The subjects' typical move beyond their references, each way: what the cycle did to
    // subjects in general (a dependency they share, a host), which no single one is blamed for.
    std::map<Direction, std::vector<double>> excesses;
    std::vector<std::optional<double>> excess(members.size());
    std::vector<std::string> reference(members.size());
    for (std::size_t m = 0; m < members.size(); ++m) {
      const HeldStep& step = steps[members[m]];
      excess[m] = excess_over_reference(*step.key, step.trigger->direction, cycle, &reference[m]);
      if (excess[m]) excesses[step.trigger->direction].push_back(*excess[m]);
    }
    const std::string environment = steps[members.front()].key->environment;
    for (std::size_t m = 0; m < members.size(); ++m) {
      StepDecision& decision = decisions[members[m]];
      if (decision.incident) continue;
      const HeldStep& step = steps[members[m]];
      const Direction way = step.trigger->direction;
      if (excess[m]) {
        const double typical = median(excesses[way]);
        const double margin = std::log1p(margin_to(step.trigger->verdict.band, way));
        // Only where the cycle's subjects moved with their references: where they moved beyond
        // them as a rule (a dependency they share), that is the cycle's story, not this key's.
        // And most of its move must be beyond its reference's: -98.4% against a reference's
        // -98.0% is a shared benchmark change, however large the ratio's change in log scale.
        const double move = std::abs(std::log1p(step.trigger->verdict.relative_change));
        if (std::abs(typical) <= parameters_.own_excess &&
            *excess[m] - typical > parameters_.own_excess && *excess[m] > margin &&
            *excess[m] >= parameters_.own_share * move) {
          decision.own_reason =
              "its own move: " + core::format_change(step.trigger->verdict.relative_change) +
              " against its reference " + reference[m] + ", " +
              core::format_change(std::expm1(*excess[m] - typical)) +
              " beyond what the subjects of the " + std::to_string(stepped) + " keys of " +
              environment + " that stepped in this cycle typically did";
          continue;
        }
      }
      decision.incident = EnvironmentReason{id, "one of " + std::to_string(stepped) + " keys of " +
                                                    environment + " that stepped in this cycle"};
    }
  }
  return decisions;
}

}  // namespace kernelwatch::detectors
