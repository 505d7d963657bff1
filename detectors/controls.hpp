// Controls across keys: whether a key's step belongs to its environment rather than to its own
// code. Per environment, the judged runs fall into cycles (runs closer than cycle_gap); each cycle
// keeps one row per key (its centre, change, which way it moved). A step is the environment's
// when, in its onset's cycle, (a) a reference provider's subject of the same benchmark and
// workload moved the same way, (b) a subject's reference moved the same way and the ratio between
// them stayed inside the subject's band, or (c) for a reference, enough references of comparable
// duration moved with it (a host shift). Pure; standard library, core and detectors/ only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/time.hpp"
#include "detectors/band.hpp"
#include "detectors/key_detector.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

// Why a step is its environment's: the incident it joins and the reason, one line.
struct EnvironmentReason {
  std::string incident;  // "<environment>@<cycle start, RFC 3339>/<direction>"
  std::string reason;
};

class Controls {
 public:
  explicit Controls(ControlParameters parameters);

  // A judged run of `key` and its verdict: joins its environment's current cycle (a new cycle
  // when it comes more than cycle_gap after the environment's newest run).
  void record(const KeyLabels& key, const Observation& run, const Verdict& verdict);
  // Why this step is its environment's, or nullopt (the key's own). Reads only the cycle of the
  // trigger's onset run; nullopt when that cycle is no longer kept.
  [[nodiscard]] std::optional<EnvironmentReason> environment_reason(const KeyLabels& key,
                                                                    const Trigger& trigger) const;
  [[nodiscard]] bool is_reference(const std::string& provider) const;

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
    std::map<std::string, Row> rows;  // by key identity
  };
  using Subject = std::tuple<std::string, std::string, std::string>;  // benchmark, workload, env

  [[nodiscard]] const Cycle* cycle_of(const std::string& environment, core::Timestamp at) const;

  ControlParameters parameters_;
  std::map<std::string, std::deque<Cycle>> cycles_;        // per environment, newest last
  std::map<Subject, std::vector<std::string>> same_work_;  // key identities per subject
};

}  // namespace kernelwatch::detectors
