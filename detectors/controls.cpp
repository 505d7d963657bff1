#include "detectors/controls.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kernelwatch::detectors {
namespace {

std::string signed_percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", fraction * 100);
  return text;
}

}  // namespace

Controls::Controls(ControlParameters parameters) : parameters_(std::move(parameters)) {}

bool Controls::is_reference(const std::string& provider) const {
  return std::find(parameters_.reference_providers.begin(), parameters_.reference_providers.end(),
                   provider) != parameters_.reference_providers.end();
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
  const std::string identity = key.identity();
  auto& subjects = same_work_[{key.benchmark, key.workload, key.environment}];
  if (std::find(subjects.begin(), subjects.end(), identity) == subjects.end()) {
    subjects.push_back(identity);
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
  cycle.rows[identity] = std::move(row);
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

std::optional<EnvironmentReason> Controls::environment_reason(const KeyLabels& key,
                                                              const Trigger& trigger) const {
  const Cycle* cycle = cycle_of(key.environment, trigger.onset.observed_at);
  if (cycle == nullptr) return std::nullopt;
  const auto mine = cycle->rows.find(key.identity());
  if (mine == cycle->rows.end() || mine->second.center <= 0) return std::nullopt;
  const Row& me = mine->second;
  const Direction way = trigger.direction;
  const double my_move = std::log1p(me.relative_change);
  const std::string incident = key.environment + "@" + core::format_timestamp(cycle->start) + "/" +
                               std::string(core::to_string(way));

  // (a) and (b): the other role on the same benchmark, workload and environment moved too.
  const auto subjects = same_work_.find({key.benchmark, key.workload, key.environment});
  if (subjects != same_work_.end()) {
    for (const auto& other_identity : subjects->second) {
      if (other_identity == key.identity()) continue;
      const auto other = cycle->rows.find(other_identity);
      if (other == cycle->rows.end()) continue;
      const Row& them = other->second;
      if (them.reference == me.reference || them.center <= 0 || them.moved != way) continue;
      if (me.reference) {
        return EnvironmentReason{incident, "its subject " + them.provider +
                                               " moved the same way (" +
                                               signed_percent(them.relative_change) +
                                               ") in this cycle: a benchmark or host change"};
      }
      const double ratio = my_move - std::log1p(them.relative_change);
      if (std::abs(ratio) <= std::log1p(margin_to(trigger.verdict.band, way))) {
        return EnvironmentReason{incident, "its reference " + them.provider +
                                               " moved the same way (" +
                                               signed_percent(them.relative_change) +
                                               ") and the ratio to it changed only " +
                                               signed_percent(std::expm1(ratio))};
      }
    }
  }
  if (!me.reference) return std::nullopt;

  // (c) A host shift: references of comparable duration moved with this one.
  const double needed = parameters_.host_share * std::abs(my_move);
  std::size_t comparable = 0;
  std::size_t same_way = 0;
  for (const auto& [identity, row] : cycle->rows) {
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
    return EnvironmentReason{incident, std::to_string(same_way) + " of " +
                                           std::to_string(comparable) + " references within " +
                                           ratio + "x of its duration moved the same way in " +
                                           "this cycle: a host shift"};
  }
  return std::nullopt;
}

}  // namespace kernelwatch::detectors
