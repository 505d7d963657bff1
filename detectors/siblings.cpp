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
  return core::UnitId::of(p).str();
}
std::string host_unit(const core::Placement& p) {
  return core::UnitId::host_of(p).str();
}

// The runs of a cycle as small indices, made once for both levels: a replay judges every round
// of a history (5,000 runs a round in docs/PERFORMANCE.md's), so the runs are grouped by counting
// and sorting indices, not in maps of strings.
struct Indexed {
  std::vector<std::string_view> keys;  // by key index: the runs' views
  // The runs with a median, by key index (counting sort: in run order within a key).
  std::vector<std::uint32_t> order;
  std::vector<std::uint32_t> key_of;  // by run index (those in `order`)
};

Indexed index_runs(std::span<const PlacedRun> runs) {
  Indexed out;
  // The Controls' runs of a key view one string: found by where it is, else by its text.
  std::unordered_map<const char*, std::uint32_t> key_at;
  std::unordered_map<std::string_view, std::uint32_t> key_index;
  std::vector<std::uint32_t> per_key;  // runs per key index
  out.key_of.assign(runs.size(), 0);
  for (std::uint32_t r = 0; r < runs.size(); ++r) {
    const PlacedRun& run = runs[r];
    if (run.median <= 0) continue;
    std::uint32_t k = 0;
    const auto seen = key_at.find(run.key.data());
    if (seen != key_at.end() && out.keys[seen->second].size() == run.key.size()) {
      k = seen->second;
    } else {
      const auto [it, fresh] =
          key_index.try_emplace(run.key, static_cast<std::uint32_t>(out.keys.size()));
      if (fresh) {
        out.keys.push_back(run.key);
        per_key.push_back(0);
      }
      k = it->second;
      key_at[run.key.data()] = k;
    }
    out.key_of[r] = k;
    ++per_key[k];
  }
  // Where each key's runs begin in `order`.
  std::uint32_t at = 0;
  for (auto& n : per_key) at += std::exchange(n, at);
  out.order.resize(at);
  for (std::uint32_t r = 0; r < runs.size(); ++r) {
    if (runs[r].median > 0) out.order[per_key[out.key_of[r]]++] = r;
  }
  return out;
}

// One level's runs (GPUs by host, or hosts), each unit a small index.
struct Grouped {
  struct Entry {
    std::uint32_t group = 0;
    std::uint32_t key = 0;
    std::uint32_t unit = 0;
    UnitRun run;
  };
  std::vector<Entry> entries;               // by key, group, unit: one per unit and key
  std::vector<std::string_view> keys;       // by index: the runs' views
  std::vector<std::string> unit_ids;        // by index: core::UnitId's form
  std::vector<core::Placement> placements;  // by unit index: the first run's
  std::vector<std::uint32_t> unit_group;    // by unit index

  // The unit named `id`, made from `placement` when new, in group `group`.
  std::uint32_t unit(std::string id, const core::Placement& placement, std::uint32_t group) {
    const auto [it, fresh] =
        unit_index_.try_emplace(std::move(id), static_cast<std::uint32_t>(unit_ids.size()));
    if (fresh) {
      unit_ids.push_back(it->first);
      placements.push_back(placement);
      unit_group.push_back(group);
    }
    return it->second;
  }

 private:
  std::map<std::string, std::uint32_t> unit_index_;
};

bool entry_less(const Grouped::Entry& a, const Grouped::Entry& b) {
  return std::tie(a.key, a.group, a.unit) < std::tie(b.key, b.group, b.unit);
}

// A's entries sorted by key, group and unit, in run order among equals: a key's runs are few
// (one per unit), and come in unit order in a replay.
void sort_key_entries(std::vector<Grouped::Entry>& entries, std::size_t begin) {
  const auto first = entries.begin() + static_cast<std::ptrdiff_t>(begin);
  if (entries.size() - begin > 32) {
    std::stable_sort(first, entries.end(), entry_less);
    return;
  }
  for (auto it = first; it != entries.end(); ++it) {
    const Grouped::Entry entry = *it;
    auto at = it;
    for (; at != first && entry_less(entry, *(at - 1)); --at) *at = *(at - 1);
    *at = entry;
  }
}

// Every run's entry at one level, by key, group and unit, in run order among equals.
// `make_unit(placement)`: its unit at this level (kNoUnit: none), asked once per placement, in
// run order (a unit's first run names its placement).
constexpr std::uint32_t kNoUnit = UINT32_MAX;
template <typename MakeUnit>
std::vector<Grouped::Entry> level_entries(std::span<const PlacedRun> runs, const Indexed& indexed,
                                          const MakeUnit& make_unit, const Grouped& out) {
  // Made once per placement: a cycle's runs repeat a few placements many times (the same one in
  // a row, GPU after GPU).
  std::vector<std::uint32_t> unit_of(runs.size(), kNoUnit);
  {
    std::unordered_map<const core::Placement*, std::uint32_t> units;
    const core::Placement* last = nullptr;
    std::uint32_t last_unit = kNoUnit;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      if (runs[r].median <= 0) continue;
      if (runs[r].placement != last) {
        const auto [it, fresh] = units.try_emplace(runs[r].placement, kNoUnit);
        if (fresh) it->second = make_unit(*runs[r].placement);
        last = runs[r].placement;
        last_unit = it->second;
      }
      unit_of[r] = last_unit;
    }
  }
  std::vector<Grouped::Entry> entries;
  entries.reserve(indexed.order.size());
  std::size_t key_begin = 0;  // where the current key's entries begin
  for (const std::uint32_t r : indexed.order) {
    const std::uint32_t unit = unit_of[r];
    if (unit == kNoUnit) continue;
    const std::uint32_t key = indexed.key_of[r];
    if (!entries.empty() && entries.back().key != key) {
      sort_key_entries(entries, key_begin);
      key_begin = entries.size();
    }
    entries.push_back({out.unit_group[unit], key, unit, UnitRun{runs[r].median, runs[r].moved}});
  }
  sort_key_entries(entries, key_begin);
  return entries;
}

Grouped by_gpu(std::span<const PlacedRun> runs, const Indexed& indexed) {
  Grouped out;
  out.keys = indexed.keys;
  std::map<std::string_view, std::uint32_t> groups;  // by host
  const auto make_unit = [&](const core::Placement& p) {
    if (p.gpu.empty() && p.gpu_uuid.empty()) return kNoUnit;
    const auto group =
        groups.try_emplace(p.host, static_cast<std::uint32_t>(groups.size())).first->second;
    return out.unit(gpu_unit(p), p, group);
  };
  // A unit's later run of a key in the cycle stands for it (the entries are in run order).
  for (auto& entry : level_entries(runs, indexed, make_unit, out)) {
    if (!out.entries.empty() && !entry_less(out.entries.back(), entry)) {
      out.entries.back() = entry;
    } else {
      out.entries.push_back(entry);
    }
  }
  return out;
}

// A host's run of a key: the median of its GPUs' medians, moved the way most of them moved.
Grouped by_host(std::span<const PlacedRun> runs, const Indexed& indexed) {
  Grouped out;
  out.keys = indexed.keys;
  const auto make_unit = [&](const core::Placement& p) {
    if (p.host.empty()) return kNoUnit;
    return out.unit(host_unit(p), core::Placement{p.host, "", "", ""}, 0);
  };
  // Every run, by key and host.
  const std::vector<Grouped::Entry> entries = level_entries(runs, indexed, make_unit, out);
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
  // The units of each group that ran anything in the cycle, by group index. Not bounded by the
  // units: two placements of one unit id ("a" GPU "b/c" and "a/b" GPU "c") use two groups.
  std::size_t groups = 0;
  for (const auto& entry : grouped.entries) {
    groups = std::max<std::size_t>(groups, std::size_t{entry.group} + 1);
  }
  std::vector<std::size_t> in_group(groups, 0);
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

core::UnitId OutOfLine::unit_id() const {
  return host_level ? core::UnitId::host_of(placement) : core::UnitId::of(placement);
}

std::vector<OutOfLine> out_of_line(std::span<const PlacedRun> runs,
                                   const ControlParameters& parameters) {
  std::vector<OutOfLine> out;
  const Indexed indexed = index_runs(runs);
  collect(by_gpu(runs, indexed), false, parameters, out);
  collect(by_host(runs, indexed), true, parameters, out);
  return out;
}

bool back_in_line(std::span<const PlacedRun> runs, const std::string& unit,
                  const ControlParameters& parameters) {
  const bool host_level = unit.starts_with("host:");
  const Indexed indexed = index_runs(runs);
  const Grouped grouped = host_level ? by_host(runs, indexed) : by_gpu(runs, indexed);
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
