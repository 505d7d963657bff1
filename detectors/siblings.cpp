#include "detectors/siblings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>
#include <tuple>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

using core::Direction;

// A unit's run of one key: its median and which way it moved.
struct UnitRun {
  double median = 0;
  std::optional<Direction> moved;
};

// group -> key -> unit -> its run; the placement each unit stands for. The groups and keys are
// views of the runs (alive while they are judged), the units views of `placements`' keys: no
// string is copied per run (a replay judges every round of a history: issue #27's figures).
struct Grouped {
  std::map<std::string_view, std::map<std::string_view, std::map<std::string_view, UnitRun>>> runs;
  std::map<std::string, core::Placement, std::less<>> placements;  // by unit id

  // The id of the unit `make` names, stored once with its placement.
  template <typename Make>
  std::string_view unit(const core::Placement& placement, Make make) {
    return placements.try_emplace(make(placement), placement).first->first;
  }
};

std::string gpu_unit(const core::Placement& p) {
  return "gpu:" + p.host + "/" + p.unit();
}
std::string host_unit(const core::Placement& p) {
  return "host:" + p.host;
}

Grouped by_gpu(std::span<const PlacedRun> runs) {
  Grouped out;
  // Each GPU's id, made once: a cycle's runs repeat a few GPUs many times.
  std::map<std::tuple<std::string_view, std::string_view, std::string_view>, std::string_view> seen;
  for (const auto& run : runs) {
    const auto& p = run.placement;
    if ((p.gpu.empty() && p.gpu_uuid.empty()) || run.median <= 0) continue;
    auto [it, fresh] = seen.try_emplace({p.host, p.gpu_uuid, p.gpu});
    if (fresh) it->second = out.unit(p, gpu_unit);
    out.runs[p.host][run.key][it->second] = UnitRun{run.median, run.moved};
  }
  return out;
}

// A host's run of a key: the median of its GPUs' medians, moved the way most of them moved.
Grouped by_host(std::span<const PlacedRun> runs) {
  std::map<std::string_view, std::map<std::string_view, std::vector<const PlacedRun*>>>
      per;  // key, host
  Grouped out;
  for (const auto& run : runs) {
    if (run.placement.host.empty() || run.median <= 0) continue;
    per[run.key][run.placement.host].push_back(&run);
  }
  std::map<std::string_view, std::string_view> units;  // host -> its unit id
  for (const auto& [key, hosts] : per) {
    for (const auto& [host, host_runs] : hosts) {
      std::vector<double> medians;
      std::map<Direction, std::size_t> moved;
      for (const auto* r : host_runs) {
        medians.push_back(r->median);
        if (r->moved) ++moved[*r->moved];
      }
      UnitRun unit{median(medians), std::nullopt};
      for (const auto& [way, count] : moved) {
        if (2 * count > host_runs.size()) unit.moved = way;
      }
      auto [it, fresh] = units.try_emplace(host);
      if (fresh) it->second = out.unit(core::Placement{std::string(host), "", "", ""}, host_unit);
      out.runs[""][key][it->second] = unit;
    }
  }
  return out;
}

struct Tally {
  std::size_t compared = 0;
  std::size_t out = 0;
  std::map<Direction, std::vector<double>> changes;         // log ratios of its out-of-line keys
  std::map<Direction, std::vector<std::string_view>> keys;  // and those keys, the same order
  std::size_t siblings = 0;
};

// By unit id: views of `grouped`'s, valid while it is.
std::map<std::string_view, Tally> tally(const Grouped& grouped,
                                        const ControlParameters& parameters) {
  std::map<std::string_view, Tally> out;
  const double threshold = std::log1p(parameters.moved_threshold);
  for (const auto& [group, keys] : grouped.runs) {
    std::map<std::string_view, bool> in_group;
    for (const auto& [key, units] : keys) {
      for (const auto& [unit, run] : units) in_group[unit] = true;
    }
    for (const auto& [key, units] : keys) {
      if (units.size() < 3) continue;
      for (const auto& [unit, run] : units) {
        Tally& t = out[unit];
        t.siblings = in_group.size() - 1;
        ++t.compared;
        if (!run.moved) continue;
        std::vector<double> others;
        std::size_t moved_too = 0;
        for (const auto& [other, other_run] : units) {
          if (other == unit) continue;
          others.push_back(other_run.median);
          moved_too += other_run.moved == run.moved ? 1 : 0;
        }
        if (4 * moved_too > others.size()) continue;
        const double ratio = std::log(run.median / median(others));
        const bool beyond =
            *run.moved == Direction::Regression ? ratio >= threshold : ratio <= -threshold;
        if (!beyond) continue;
        ++t.out;
        t.changes[*run.moved].push_back(ratio);
        t.keys[*run.moved].push_back(key);
      }
    }
  }
  return out;
}

void collect(const Grouped& grouped, bool host_level, const ControlParameters& parameters,
             std::vector<OutOfLine>& out) {
  for (const auto& [unit, t] : tally(grouped, parameters)) {
    const std::size_t needed =
        std::max<std::size_t>(1, std::min(parameters.incident_min_keys, t.compared));
    if (t.out < needed || 2 * t.out <= t.compared) continue;
    // The way most of its out-of-line keys went.
    Direction way = Direction::Regression;
    std::size_t most = 0;
    for (const auto& [direction, changes] : t.changes) {
      if (changes.size() > most) {
        most = changes.size();
        way = direction;
      }
    }
    OutOfLine o;
    o.placement = grouped.placements.find(unit)->second;
    o.host_level = host_level;
    o.direction = way;
    o.relative_change = std::expm1(median(t.changes.at(way)));
    o.keys_out = most;
    o.keys_compared = t.compared;
    o.siblings = t.siblings;
    if (2 * o.keys_out <= o.keys_compared) continue;
    const auto& keys = t.keys.at(way);
    o.keys.assign(keys.begin(), keys.end());  // in key order: the groups' maps are sorted
    out.push_back(std::move(o));
  }
}

}  // namespace

std::string OutOfLine::describe() const {
  char change[32];
  std::snprintf(change, sizeof change, "%.1f%%", 100.0 * std::abs(relative_change));
  std::string who = host_level ? "host " + placement.host : placement.describe();
  return who + " is " + change + " " + (direction == Direction::Regression ? "slower" : "faster") +
         " than its " + std::to_string(siblings) + (host_level ? " sibling hosts" : " siblings") +
         " on " + std::to_string(keys_out) + " of " + std::to_string(keys_compared) + " benchmarks";
}

std::string OutOfLine::unit_id() const {
  return host_level ? host_unit(placement) : gpu_unit(placement);
}

std::vector<OutOfLine> out_of_line(std::span<const PlacedRun> runs,
                                   const ControlParameters& parameters) {
  std::vector<OutOfLine> out;
  collect(by_gpu(runs), false, parameters, out);
  collect(by_host(runs), true, parameters, out);
  return out;
}

bool back_in_line(std::span<const PlacedRun> runs, const std::string& unit,
                  const ControlParameters& parameters) {
  const bool host_level = unit.starts_with("host:");
  const Grouped grouped = host_level ? by_host(runs) : by_gpu(runs);  // the tallies' views
  const auto tallies = tally(grouped, parameters);
  const auto it = tallies.find(std::string_view(unit));
  if (it == tallies.end()) return false;
  const std::size_t needed =
      std::max<std::size_t>(1, std::min(parameters.incident_min_keys, it->second.compared));
  return it->second.compared >= needed && 2 * it->second.out <= it->second.compared &&
         it->second.compared > 0;
}

}  // namespace kernelwatch::detectors
