#include "detectors/siblings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

using core::Direction;

// A unit's run of one key: its median and which way it moved.
struct UnitRun {
  double median = 0;
  std::optional<Direction> moved;
};

std::string gpu_unit(const core::Placement& p) {
  return "gpu:" + p.host + "/" + p.unit();
}
std::string host_unit(const core::Placement& p) {
  return "host:" + p.host;
}

// One level's runs (GPUs by host, or hosts), each key and unit a small index: a replay judges
// every round of a history (5,000 runs a round in docs/PERFORMANCE.md's), so the runs are grouped
// by sorting indices, not in maps of strings.
struct Grouped {
  struct Entry {
    std::uint32_t group = 0;
    std::uint32_t key = 0;
    std::uint32_t unit = 0;
    UnitRun run;
  };
  std::vector<Entry> entries;               // by group, key, unit: one per unit and key
  std::vector<std::string_view> keys;       // by index: the runs' views
  std::vector<std::string> unit_ids;        // by index: "gpu:<host>/<GPU>" or "host:<host>"
  std::vector<core::Placement> placements;  // by unit index: the first run's
  std::vector<std::uint32_t> unit_group;    // by unit index

  std::uint32_t key(std::string_view identity) {
    // The Controls' runs of a key view one string: found by where it is, else by its text.
    const auto seen = key_at_.find(identity.data());
    if (seen != key_at_.end() && keys[seen->second].size() == identity.size()) return seen->second;
    const auto [it, fresh] = key_index_.try_emplace(identity, keys.size());
    if (fresh) keys.push_back(identity);
    key_at_[identity.data()] = it->second;
    return it->second;
  }
  // The unit named `id`, made from `placement` when new, in group `group`.
  std::uint32_t unit(std::string id, const core::Placement& placement, std::uint32_t group) {
    const auto [it, fresh] = unit_index_.try_emplace(std::move(id), unit_ids.size());
    if (fresh) {
      unit_ids.push_back(it->first);
      placements.push_back(placement);
      unit_group.push_back(group);
    }
    return it->second;
  }

 private:
  std::unordered_map<std::string_view, std::uint32_t> key_index_;
  std::unordered_map<const char*, std::uint32_t> key_at_;  // by the first character's address
  std::map<std::string, std::uint32_t> unit_index_;
};

bool entry_less(const Grouped::Entry& a, const Grouped::Entry& b) {
  return std::tie(a.group, a.key, a.unit) < std::tie(b.group, b.key, b.unit);
}

Grouped by_gpu(std::span<const PlacedRun> runs) {
  Grouped out;
  // Each placement's unit, made once: a cycle's runs repeat a few placements many times.
  std::unordered_map<const core::Placement*, std::uint32_t> units;
  std::map<std::string_view, std::uint32_t> groups;  // by host
  std::vector<Grouped::Entry> entries;
  entries.reserve(runs.size());
  for (const auto& run : runs) {
    const auto& p = *run.placement;
    if ((p.gpu.empty() && p.gpu_uuid.empty()) || run.median <= 0) continue;
    auto [it, fresh] = units.try_emplace(run.placement);
    if (fresh) {
      const auto group = groups.try_emplace(p.host, groups.size()).first->second;
      it->second = out.unit(gpu_unit(p), p, group);
    }
    entries.push_back(
        {out.unit_group[it->second], out.key(run.key), it->second, UnitRun{run.median, run.moved}});
  }
  // A unit's later run of a key in the cycle stands for it (stable: in run order).
  std::stable_sort(entries.begin(), entries.end(), entry_less);
  for (auto& entry : entries) {
    if (!out.entries.empty() && !entry_less(out.entries.back(), entry)) {
      out.entries.back() = entry;
    } else {
      out.entries.push_back(entry);
    }
  }
  return out;
}

// A host's run of a key: the median of its GPUs' medians, moved the way most of them moved.
Grouped by_host(std::span<const PlacedRun> runs) {
  Grouped out;
  std::unordered_map<const core::Placement*, std::uint32_t> units;
  std::vector<Grouped::Entry> entries;  // every run, by key and host
  entries.reserve(runs.size());
  for (const auto& run : runs) {
    const auto& p = *run.placement;
    if (p.host.empty() || run.median <= 0) continue;
    auto [it, fresh] = units.try_emplace(run.placement);
    if (fresh) it->second = out.unit(host_unit(p), core::Placement{p.host, "", "", ""}, 0);
    entries.push_back({0, out.key(run.key), it->second, UnitRun{run.median, run.moved}});
  }
  std::stable_sort(entries.begin(), entries.end(), entry_less);
  std::vector<double> medians;
  for (std::size_t i = 0; i < entries.size();) {
    std::size_t end = i;
    medians.clear();
    std::size_t slower = 0;
    std::size_t faster = 0;
    for (; end < entries.size() && !entry_less(entries[i], entries[end]); ++end) {
      medians.push_back(entries[end].run.median);
      if (entries[end].run.moved == Direction::Regression) ++slower;
      if (entries[end].run.moved == Direction::Improvement) ++faster;
    }
    const std::size_t n = end - i;
    UnitRun unit{median(medians), std::nullopt};
    if (2 * slower > n) unit.moved = Direction::Regression;
    if (2 * faster > n) unit.moved = Direction::Improvement;
    out.entries.push_back({0, entries[i].key, entries[i].unit, unit});
    i = end;
  }
  return out;
}

struct Tally {
  bool compared_any = false;  // compared on a key (ran it with at least two siblings)
  std::size_t compared = 0;
  std::size_t out = 0;
  std::map<Direction, std::vector<double>> changes;         // log ratios of its out-of-line keys
  std::map<Direction, std::vector<std::string_view>> keys;  // and those keys, the same order
  std::size_t siblings = 0;
};

// By unit index.
std::vector<Tally> tally(const Grouped& grouped, const ControlParameters& parameters) {
  std::vector<Tally> out(grouped.unit_ids.size());
  const double threshold = std::log1p(parameters.moved_threshold);
  // The units of each group that ran anything in the cycle.
  std::map<std::uint32_t, std::size_t> in_group;
  {
    std::vector<bool> counted(grouped.unit_ids.size(), false);
    for (const auto& entry : grouped.entries) {
      if (counted[entry.unit]) continue;
      counted[entry.unit] = true;
      ++in_group[entry.group];
    }
  }
  std::vector<double> others;
  const auto& entries = grouped.entries;
  for (std::size_t i = 0; i < entries.size();) {
    std::size_t end = i;
    while (end < entries.size() && entries[end].group == entries[i].group &&
           entries[end].key == entries[i].key) {
      ++end;
    }
    const std::size_t begin = i;
    i = end;
    if (end - begin < 3) continue;
    for (std::size_t u = begin; u < end; ++u) {
      const UnitRun& run = entries[u].run;
      Tally& t = out[entries[u].unit];
      t.compared_any = true;
      t.siblings = in_group[entries[u].group] - 1;
      ++t.compared;
      if (!run.moved) continue;
      others.clear();
      std::size_t moved_too = 0;
      for (std::size_t o = begin; o < end; ++o) {
        if (o == u) continue;
        others.push_back(entries[o].run.median);
        moved_too += entries[o].run.moved == run.moved ? 1 : 0;
      }
      if (4 * moved_too > others.size()) continue;
      const double ratio = std::log(run.median / median(others));
      const bool beyond =
          *run.moved == Direction::Regression ? ratio >= threshold : ratio <= -threshold;
      if (!beyond) continue;
      ++t.out;
      t.changes[*run.moved].push_back(ratio);
      t.keys[*run.moved].push_back(grouped.keys[entries[u].key]);
    }
  }
  return out;
}

void collect(const Grouped& grouped, bool host_level, const ControlParameters& parameters,
             std::vector<OutOfLine>& out) {
  const auto tallies = tally(grouped, parameters);
  // In the order of their ids.
  std::vector<std::uint32_t> order(grouped.unit_ids.size());
  for (std::uint32_t u = 0; u < order.size(); ++u) order[u] = u;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return grouped.unit_ids[a] < grouped.unit_ids[b];
  });
  for (const std::uint32_t unit : order) {
    const Tally& t = tallies[unit];
    if (!t.compared_any) continue;
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
    o.placement = grouped.placements[unit];
    o.host_level = host_level;
    o.direction = way;
    o.relative_change = std::expm1(median(t.changes.at(way)));
    o.keys_out = most;
    o.keys_compared = t.compared;
    o.siblings = t.siblings;
    if (2 * o.keys_out <= o.keys_compared) continue;
    const auto& keys = t.keys.at(way);
    o.keys.assign(keys.begin(), keys.end());
    std::sort(o.keys.begin(), o.keys.end());
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
  const Grouped grouped = host_level ? by_host(runs) : by_gpu(runs);
  const auto it = std::find(grouped.unit_ids.begin(), grouped.unit_ids.end(), unit);
  if (it == grouped.unit_ids.end()) return false;
  // The tallies are kept: a reference into tally()'s temporary would dangle at the `;`.
  const std::vector<Tally> tallies = tally(grouped, parameters);
  const Tally& t = tallies[static_cast<std::size_t>(it - grouped.unit_ids.begin())];
  if (!t.compared_any) return false;
  const std::size_t needed =
      std::max<std::size_t>(1, std::min(parameters.incident_min_keys, t.compared));
  return t.compared >= needed && 2 * t.out <= t.compared && t.compared > 0;
}

}  // namespace kernelwatch::detectors
