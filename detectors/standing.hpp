// How every view shows a key: its state in the one vocabulary (core::KeyState), its change and
// the band that change is measured against. The API, `kernelwatch status`, the dashboard and the
// report all show a key through standing_of(), so they cannot tell one key two ways.
// Pure; core and detectors/ only.
#pragma once

#include <optional>

#include "core/alert.hpp"
#include "core/record.hpp"
#include "detectors/band.hpp"

namespace kernelwatch::detectors {

struct Standing {
  core::KeyState state = core::KeyState::InsufficientData;
  // The open alert shown: the failed one first, else the step or drift (or incident member).
  std::optional<core::Alert> alert;
  // The change shown and the band it is against: an open alert's (the move it fired with,
  // against the band its onset breached), else the newest judgeable run's against its band;
  // nullopt before the key has a band.
  std::optional<double> change;
  std::optional<core::Band> band;
};

// `last_status`: the newest run's status (nullopt: no run); `verdict`: the newest judgeable
// run's.
[[nodiscard]] Standing standing_of(std::optional<core::RunStatus> last_status,
                                   const Verdict& verdict,
                                   const std::optional<core::Alert>& open_alert,
                                   const std::optional<core::Alert>& open_failed_alert);

}  // namespace kernelwatch::detectors
