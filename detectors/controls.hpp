// Controls across keys: whether a key's step belongs to a cause shared with other keys (an
// incident) rather than to its own code. Per environment, the judged runs fall into cycles (runs
// closer than cycle_gap); each cycle keeps one row per key (its centre, change, which way it
// moved). The held steps of a cycle are decided together:
//  - a subject whose reference on the same benchmark and workload moved the same way while the
//    ratio between them held, a reference whose subject moved the same way, or a reference that
//    moved with enough references of comparable duration (a host shift) join the incident of
//    their onset's cycle;
//  - when at least incident_min_keys keys of one environment stepped in one cycle, all of them
//    join it, except a subject that moved well beyond its reference, further than the cycle's
//    other subjects moved beyond theirs: that move is the subject's own.
// Pure; standard library, core and detectors/ only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/time.hpp"
#include "detectors/band.hpp"
#include "detectors/key_detector.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"
#include "detectors/siblings.hpp"

namespace kernelwatch::detectors {

// Why a step is part of an incident: the incident it joins and the reason, one line.
struct EnvironmentReason {
  core::AlertId incident;  // "<environment>@<cycle start, RFC 3339>"
  std::string reason;
};

// A step held until its cycle closed, as the controls see it.
struct HeldStep {
  const KeyLabels* key = nullptr;
  const Trigger* trigger = nullptr;
};

// What the controls decided of one held step: the incident it joins (nullopt: the key's own
// alert), and for an own step in a cycle with an incident, why it stands apart ("" otherwise).
struct StepDecision {
  std::optional<EnvironmentReason> incident;
  std::string own_reason;
};

class Controls {
 public:
  explicit Controls(ControlParameters parameters);
  // Not copied: its placed runs are views of its own identities and placements (moved, they
  // stay valid).
  Controls(const Controls&) = delete;
  Controls& operator=(const Controls&) = delete;
  Controls(Controls&&) = default;
  Controls& operator=(Controls&&) = default;

  // A judged run of `key` and its verdict: joins its environment's current cycle (a new cycle
  // when it comes more than cycle_gap after the environment's newest run).
  void record(const KeyLabels& key, const Observation& run, const Verdict& verdict);
  // The held steps of one close, each against the cycle of its onset run (a step whose cycle is
  // no longer kept is its key's own). `members_before(id)`: how many members the incident with
  // this id already has (a step confirmed a cycle later joins the incident of its onset).
  [[nodiscard]] std::vector<StepDecision> decide(
      std::span<const HeldStep> steps,
      const std::function<std::size_t(const core::AlertId&)>& members_before) const;
  [[nodiscard]] bool is_reference(const std::string& provider) const;
  // How many keys of `environment` were judged in the kept cycle holding `at` without moving
  // (0 when no kept cycle holds it).
  [[nodiscard]] std::size_t unmoved_keys(const std::string& environment, core::Timestamp at) const;
  // Per environment, the runs that name their host or GPU (siblings.hpp) since the last
  // clear_placed(): the runs of one daemon cycle (or posted batch, or replayed gap), whatever
  // cycle_gap makes of them (a daemon with a 15-minute schedule never leaves an hour's gap).
  struct PlacedCycle {
    std::string environment;
    core::Timestamp start{};
    core::Timestamp newest{};
    std::span<const PlacedRun> runs;
  };
  [[nodiscard]] std::vector<PlacedCycle> placed_cycles() const;
  // The cycle is judged: its placed runs are forgotten (memory is one cycle's runs).
  void clear_placed() {
    placed_.clear();
    by_address_.clear();
    placements_.clear();
  }
  [[nodiscard]] const ControlParameters& parameters() const { return parameters_; }

 private:
  struct Row {
    bool reference = false;
    double center = 0;  // 0: judged without a band
    double relative_change = 0;
    std::optional<Direction> moved;
    std::string provider;
  };
  struct Cycle {
    core::Timestamp start{};
    core::Timestamp newest{};
    std::unordered_map<std::string, Row> rows;  // by key identity (read by lookups and counts)
  };
  struct Placed {
    core::Timestamp start{};
    core::Timestamp newest{};
    std::vector<PlacedRun> runs;  // the runs that say where they ran, in order
  };
  using Subject = std::tuple<std::string, std::string, std::string>;  // benchmark, workload, env

  [[nodiscard]] const Cycle* cycle_of(const std::string& environment, core::Timestamp at) const;
  // The pairwise and host-shift rules: why this step is its environment's, or "".
  [[nodiscard]] std::string paired_reason(const KeyLabels& key, const Trigger& trigger,
                                          const Cycle& cycle) const;
  // How far (log scale, the step's way) a subject moved beyond the reference of its workload
  // that moved most like it in the cycle; nullopt for a reference or a subject without one.
  [[nodiscard]] std::optional<double> excess_over_reference(const KeyLabels& key, Direction way,
                                                            const Cycle& cycle,
                                                            std::string* reference) const;

  ControlParameters parameters_;
  std::map<std::string, std::deque<Cycle>> cycles_;  // per environment, newest last
  std::map<std::string, Placed> placed_;             // per environment, since clear_placed
  // Where the placed runs ran, each placement once (their PlacedRun::placement).
  struct PlacementHash {
    std::size_t operator()(const core::Placement& p) const {
      const std::hash<std::string> h;
      return ((h(p.host) * 31 + h(p.gpu)) * 31 + h(p.gpu_uuid)) * 31 + h(p.pci_bus_id);
    }
  };
  struct PlacementEqual {
    bool operator()(const core::Placement& a, const core::Placement& b) const {
      return a.gpu_uuid == b.gpu_uuid && a.gpu == b.gpu && a.host == b.host &&
             a.pci_bus_id == b.pci_bus_id;
    }
  };
  std::unordered_set<core::Placement, PlacementHash, PlacementEqual> placements_;
  // The runs' shared placements (a replay's runs share one per host and GPU) found by address,
  // not by their four strings; each kept, so that its address is not reused while it is a key.
  struct Kept {
    core::SharedPlacement shared;
    const core::Placement* once = nullptr;  // in placements_
  };
  std::unordered_map<const core::Placement*, Kept> by_address_;
  std::map<Subject, std::vector<std::string>> same_work_;  // key identities per subject
  std::unordered_set<std::string> known_;                  // every identity in same_work_
};

// "<environment>@<cycle start>": the id of the incident of one environment's cycle.
[[nodiscard]] core::AlertId incident_id(const std::string& environment, core::Timestamp start);

}  // namespace kernelwatch::detectors
