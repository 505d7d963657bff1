// Controls across keys: a step that the reference provider on the same environment and
// workload shows at the same time, or that most keys of one environment show in the same cycle,
// is an environment shift: kind Environment, one incident per environment, cycle and direction.
// Pure; standard library, core and detectors/ only.
#pragma once

#include <span>
#include <vector>

#include "core/time.hpp"
#include "detectors/alert_state.hpp"
#include "detectors/band.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

struct RunVerdictRecord {
  core::Timestamp observed_at{};
  VerdictKind kind = VerdictKind::InsufficientData;
};

// Every verdict of one key (what the per-key replay saw), oldest first.
struct KeyVerdicts {
  KeyLabels key;
  std::vector<RunVerdictRecord> runs;
};

// Relabels Step alerts as Environment alerts and sets their incident ("<environment>@<cycle
// start, RFC 3339>/<direction>"). Drift alerts are left alone. Cycles: runs of one environment
// closer than controls.cycle_gap in time.
void apply_controls(std::span<Alert> alerts, std::span<const KeyVerdicts> verdicts,
                    const ControlParameters& controls);

}  // namespace kernelwatch::detectors
