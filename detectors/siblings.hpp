// Siblings as controls (issue #27): identical GPUs of one host run the same benchmarks in one
// cycle and share their keys, so each GPU's runs can be judged against its siblings' runs of the
// same keys in the same cycle. A GPU whose runs breached their bands while its siblings' runs of
// the same keys stayed in band is out of line: one alert for that GPU, never a key's alert (the
// key detector sees its runs as excursions between siblings' runs in band). When the siblings
// moved too, no GPU is out of line and the usual rules (a step, an incident) apply. Hosts are
// compared the same way when several hosts' runs of one environment share a cycle (imported or
// posted with their `host` label): one host out of line is a host alert.
// Pure; standard library, core and detectors/ only.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "core/placement.hpp"
#include "core/time.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

// One judged run of one key in a cycle, where it ran. Views: the caller keeps the identity and
// the placement alive while the runs are judged (the Controls keep each once, not per run).
struct PlacedRun {
  std::string_view key;                        // the key's identity
  const core::Placement* placement = nullptr;  // never null
  double median = 0;                           // ns
  std::optional<core::Direction> moved;  // breached its band (or moved moved_threshold) this way
  core::Timestamp at{};                  // observed_at
};

// One unit (a GPU of a host, or a host) out of line with its siblings in one cycle.
struct OutOfLine {
  core::Placement placement;  // the GPU (host, index, UUID) or, for a host, the host alone
  bool host_level = false;    // a host among hosts, not a GPU among its host's GPUs
  core::Direction direction = core::Direction::Regression;
  double relative_change = 0;     // median over its out-of-line keys of its median / siblings' - 1
  std::size_t keys_out = 0;       // keys on which it is out of line
  std::size_t keys_compared = 0;  // keys it ran with at least two siblings in the cycle
  std::size_t siblings = 0;       // the other units of its group that ran in the cycle
  // The keys (PlacedRun::key) on which it is out of line its way (keys_out of them), sorted:
  // what `kernelwatch backtest --benchmark/--provider/--workload` select it by.
  std::vector<std::string> keys;

  // "GPU 3 (UUID GPU-...) of host h100-a is 12.0% slower than its 7 siblings on 9 of 9
  // benchmarks"
  [[nodiscard]] std::string describe() const;
  // Which unit an alert is about: "gpu:<host>/<uuid or index>" or "host:<host>" (core::UnitId).
  [[nodiscard]] core::UnitId unit_id() const;
};

// A unit is compared on a key when at least two siblings ran it in the cycle. It is out of line
// on that key when its run moved one way, at most a quarter of its siblings' runs moved that way,
// and its median differs from the siblings' median by at least moved_threshold that way. It is
// out of line in the cycle when it is so on most of the keys it was compared on (more than half)
// and on at least min(incident_min_keys, keys compared) of them. GPUs are grouped by host; hosts
// (each the median of its GPUs' runs of a key) are compared when at least three hosts ran.
[[nodiscard]] std::vector<OutOfLine> out_of_line(std::span<const PlacedRun> runs,
                                                 const ControlParameters& parameters);

// Whether `unit` (OutOfLine::unit_id()) was compared on enough keys in these runs and was in
// line on them: an open alert about it resolves.
[[nodiscard]] bool back_in_line(std::span<const PlacedRun> runs, const std::string& unit,
                                const ControlParameters& parameters);

}  // namespace kernelwatch::detectors
