// The fleet as controls (storage.fleet_controls, docs/FLEET.md): hosts whose daemons share one
// PostgreSQL database run the same keys, each judged against its own runs. When a key of this
// host steps, the other hosts' runs of the key around the step say whether the host moved alone:
// the other hosts ran the same implementation and stayed where they were, while this host's run
// moved. A host that moved alone on most of the keys it judged in a cycle is out of line with its
// fleet: its steps are one alert about the host (an incident with the host's placement), never
// the keys' own alerts and never an incident blamed on the code.
// Pure; standard library, core and detectors/ only.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/alert.hpp"
#include "core/time.hpp"
#include "detectors/key_detector.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

// Another host's run of a key, as the fleet rule reads it (not the whole observation: a key keeps
// up to kFleetRunsKept of them per host).
struct FleetRun {
  std::shared_ptr<const std::string> host;  // its `host` label, shared by its host's runs
  core::Timestamp at{};
  double median = 0;           // ns
  std::string implementation;  // its implementation digest ("" when the source did not say)
};

// Per host, the rule reads its newest kFleetRunsNow runs in a step's window (from cycle_gap before
// the step's onset to the run that confirmed it) against its newest kFleetRunsBefore runs before
// that window; kFleetRunsKept of a host's runs are kept per key between steps.
inline constexpr std::size_t kFleetRunsNow = 2;
inline constexpr std::size_t kFleetRunsBefore = 3;
inline constexpr std::size_t kFleetRunsKept = 12;

// What the other hosts' runs say of one step of this host.
struct FleetComparison {
  bool compared = false;  // at least two other hosts ran the key before and in the window
  bool alone = false;     // compared, and at most a quarter of them moved the step's way
  std::size_t hosts = 0;  // the other hosts compared
  std::size_t moved = 0;  // of them, those that moved the step's way
  // This host's run that confirmed the step against the median of the other hosts' runs in the
  // window, less 1 (+0.12: 12% slower than the fleet).
  double against_fleet = 0;
};

// The step `trigger` of a key of the host `host`, against the other hosts' runs of the key (any
// order; runs of `host` itself and without a host are left out). A host moved when its runs in
// the window moved moved_threshold the step's way against its runs before; a host whose runs in
// the window ran another implementation than the step's onset (both known) is not compared (the
// code changed there, or here: not the host).
[[nodiscard]] FleetComparison compare_with_fleet(const std::string& host, const Trigger& trigger,
                                                 std::span<const FleetRun> runs,
                                                 const ControlParameters& parameters);

// The other hosts' runs of each key this watch knows: those it was started from (seeds) and
// those read around its steps (controls), kept per key and host to the newest kFleetRunsKept.
// Runs read for a step wait, by the step's confirming run (`for_step`), until the cycle that
// decides it closes: a step is decided by the runs read for it and those kept from before, so
// that the daemon and every replay of what it stored decide it alike, whatever else was read
// in between.
class FleetRuns {
 public:
  // A run kept from now on (a seed).
  void keep(const std::string& key, const Observation& run);
  // A run read for the step of `key` confirmed at `for_step`.
  void add(const std::string& key, const Observation& run, core::Timestamp for_step);
  // The runs a step of `key` confirmed at `for_step` is decided by.
  [[nodiscard]] std::vector<FleetRun> for_step(const std::string& key,
                                               core::Timestamp for_step) const;
  // The cycle closed: every run read for a step is kept.
  void settle();

 private:
  [[nodiscard]] FleetRun of(const Observation& run);
  static void keep_in(std::vector<FleetRun>& kept, FleetRun run);

  std::map<std::string, std::vector<FleetRun>> kept_;  // by key identity, newest per host kept
  std::map<std::pair<std::string, core::Timestamp>, std::vector<FleetRun>> pending_;
  std::map<std::string, std::shared_ptr<const std::string>> hosts_;
};

}  // namespace kernelwatch::detectors
