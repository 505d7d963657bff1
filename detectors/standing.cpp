#include "detectors/standing.hpp"

namespace kernelwatch::detectors {

Standing standing_of(std::optional<core::RunStatus> last_status, const Verdict& verdict,
                     const std::optional<core::Alert>& open_alert,
                     const std::optional<core::Alert>& open_failed_alert) {
  Standing out;
  if (verdict.has_band) {
    out.change = verdict.relative_change;
    out.band = verdict.band;
  }
  if (open_alert && !open_failed_alert) {
    out.alert = open_alert;
    out.change = open_alert->relative_change;
    out.band = open_alert->band;
  }
  if (open_failed_alert) {
    out.alert = open_failed_alert;
    out.state = core::KeyState::Failing;
  } else if (open_alert) {
    out.state = open_alert->state == core::AlertState::Acknowledged ? core::KeyState::Acknowledged
                : core::is_incident_member(*open_alert)             ? core::KeyState::Incident
                                                                    : core::KeyState::Firing;
  } else if (last_status && *last_status != core::RunStatus::Passed) {
    out.state = core::KeyState::Inconclusive;
  } else if (verdict.breach()) {
    out.state = core::KeyState::Breached;
  } else if (verdict.kind == VerdictKind::InBand) {
    out.state = core::KeyState::InBand;
  } else if (verdict.kind == VerdictKind::Inconclusive) {
    out.state = core::KeyState::Inconclusive;
  } else {
    out.state = core::KeyState::InsufficientData;
  }
  return out;
}

}  // namespace kernelwatch::detectors
