#include "detectors/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

// One other host's runs around a step: its level before and in the window.
struct HostLevels {
  std::vector<const FleetRun*> before;  // newest first
  std::vector<const FleetRun*> now;     // newest first
  bool other_implementation = false;
};

double median_of(const std::vector<const FleetRun*>& runs) {
  std::vector<double> medians;
  medians.reserve(runs.size());
  for (const auto* run : runs) medians.push_back(run->median);
  return median(medians);
}

}  // namespace

FleetComparison compare_with_fleet(const std::string& host, const Trigger& trigger,
                                   std::span<const FleetRun> runs,
                                   const ControlParameters& parameters) {
  FleetComparison out;
  const core::Timestamp window_start = trigger.onset.observed_at - parameters.cycle_gap;
  const core::Timestamp window_end = trigger.run.observed_at;
  const std::string& implementation = trigger.onset.implementation_digest;

  std::vector<const FleetRun*> sorted;
  sorted.reserve(runs.size());
  for (const auto& run : runs) {
    if (run.host && !run.host->empty() && *run.host != host && run.median > 0 &&
        run.at <= window_end) {
      sorted.push_back(&run);
    }
  }
  std::sort(sorted.begin(), sorted.end(), [](const FleetRun* a, const FleetRun* b) {
    return std::tie(*a->host, b->at) < std::tie(*b->host, a->at);  // by host, newest first
  });
  std::map<std::string_view, HostLevels> levels;
  for (const auto* run : sorted) {
    HostLevels& level = levels[*run->host];
    if (run->at > window_start) {
      if (level.now.size() >= kFleetRunsNow) continue;
      level.now.push_back(run);
      if (!implementation.empty() && !run->implementation.empty() &&
          run->implementation != implementation) {
        level.other_implementation = true;
      }
    } else if (level.before.size() < kFleetRunsBefore) {
      level.before.push_back(run);
    }
  }

  const double sign = trigger.direction == core::Direction::Regression ? 1.0 : -1.0;
  const double threshold = std::log1p(parameters.moved_threshold);
  std::vector<double> now_medians;
  for (const auto& [name, level] : levels) {
    if (level.before.empty() || level.now.empty() || level.other_implementation) continue;
    ++out.hosts;
    const double now = median_of(level.now);
    if (sign * std::log(now / median_of(level.before)) >= threshold) ++out.moved;
    now_medians.push_back(now);
  }
  out.compared = out.hosts >= 2;
  if (!out.compared) return out;
  out.alone = 4 * out.moved <= out.hosts;
  const double mine = static_cast<double>(trigger.run.median.count());
  out.against_fleet = mine / median(now_medians) - 1.0;
  return out;
}

FleetRun FleetRuns::of(const Observation& run) {
  const std::string name = run.placement.empty() ? std::string() : run.placement->host;
  auto& host = hosts_[name];
  if (!host) host = std::make_shared<const std::string>(name);
  return FleetRun{host, run.observed_at, static_cast<double>(run.median.count()),
                  run.implementation_digest};
}

void FleetRuns::keep_in(std::vector<FleetRun>& kept, FleetRun run) {
  std::size_t of_host = 0;
  for (const auto& k : kept) {
    if (*k.host != *run.host) continue;
    if (k.at == run.at) return;  // read twice (a seed, then read for a step)
    ++of_host;
  }
  kept.push_back(std::move(run));
  if (of_host + 1 <= kFleetRunsKept) return;
  // The host's oldest run goes: the newest kFleetRunsKept stay, in whatever order they came.
  const std::string& host = *kept.back().host;
  auto oldest = kept.end();
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    if (*it->host == host && (oldest == kept.end() || it->at < oldest->at)) oldest = it;
  }
  kept.erase(oldest);
}

void FleetRuns::keep(const std::string& key, const Observation& run) {
  if (!run.judgeable()) return;
  keep_in(kept_[key], of(run));
}

void FleetRuns::add(const std::string& key, const Observation& run, core::Timestamp for_step) {
  if (!run.judgeable()) return;
  pending_[{key, for_step}].push_back(of(run));
}

std::vector<FleetRun> FleetRuns::for_step(const std::string& key, core::Timestamp for_step) const {
  std::vector<FleetRun> out;
  if (const auto kept = kept_.find(key); kept != kept_.end()) out = kept->second;
  if (const auto read = pending_.find({key, for_step}); read != pending_.end()) {
    for (const auto& run : read->second) keep_in(out, run);
  }
  return out;
}

void FleetRuns::settle() {
  for (auto& [step, runs] : pending_) {
    auto& kept = kept_[step.first];
    for (auto& run : runs) keep_in(kept, std::move(run));
  }
  pending_.clear();
}

}  // namespace kernelwatch::detectors
