// The alert lifecycle of one key: firing -> acknowledged -> resolved (a run back in the band
// the alert was raised against) or rebaselined (the new level accepted). It decides when to
// notify and is idempotent under replay. Pure; standard library, core and detectors/ only.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.hpp"
#include "detectors/attribution.hpp"
#include "detectors/band.hpp"
#include "detectors/key_detector.hpp"
#include "detectors/observation.hpp"

namespace kernelwatch::detectors {

enum class AlertState { Firing, Acknowledged, Resolved, Rebaselined };

[[nodiscard]] std::string_view to_string(AlertState state) noexcept;

// One alert as the backtest prints it and the daemon stores it.
struct Alert {
  std::string id;  // "<key digest or display>@<onset externalId>": stable under replay
  KeyLabels key;
  AlertKind kind = AlertKind::Step;
  Direction direction = Direction::Regression;
  std::string external_id;  // the run that fired
  core::Timestamp observed_at{};
  std::string onset_external_id;  // the first run at the new level
  core::Timestamp onset_observed_at{};
  std::chrono::nanoseconds median{0};  // of the run that fired
  Band band;
  std::size_t baseline_runs = 0;
  double relative_change = 0;
  std::vector<AttributionChange> attribution;
  std::string explanation;
  std::string incident;  // environment alerts of one host and cycle share it; "" otherwise
  AlertState state = AlertState::Firing;
  std::string closed_by_external_id;  // the run that resolved or superseded it
};

[[nodiscard]] Alert make_alert(const KeyLabels& key, const Trigger& trigger);

enum class Notify { None, Fired, Resolved };

[[nodiscard]] std::string_view to_string(Notify notify) noexcept;

struct AlertEvent {
  std::string alert_id;
  AlertState from = AlertState::Firing;  // equal to `to` for a fresh alert and for repeats
  AlertState to = AlertState::Firing;
  core::Timestamp at{};
  std::string cause;  // externalId of the run, or "operator", or "timer"
  Notify notify = Notify::None;
};

struct AlertPolicy {
  // A firing, unacknowledged alert is notified again this long after its last notification;
  // zero never repeats.
  std::chrono::nanoseconds repeat_interval = std::chrono::hours(24);
};

// When a reminder of an alert falls due: repeat_interval after the last notification that was
// actually queued for it (wall clock, stored by the caller), while it is firing and
// unacknowledged. nullopt: no reminder (not firing, never notified, or a zero interval). The
// time an alert's runs were observed never enters: replaying old runs cannot make one due.
[[nodiscard]] std::optional<core::Timestamp> reminder_due(
    AlertState state, const std::optional<core::Timestamp>& last_notified,
    const AlertPolicy& policy);

class AlertStateMachine {
 public:

  // Opens an alert. An open alert of the key is closed as rebaselined (superseded: its level
  // was accepted as a segment). An id seen before is ignored (replay).
  [[nodiscard]] std::vector<AlertEvent> fire(const Alert& alert, core::Timestamp at);
  // A run of the key: resolves the open alert when its median is back inside the alert's band.
  // Runs not newer than the newest one seen are ignored (replay).
  [[nodiscard]] std::vector<AlertEvent> observe(const Observation& run);
  [[nodiscard]] std::vector<AlertEvent> acknowledge(std::string_view alert_id, core::Timestamp at);
  [[nodiscard]] std::vector<AlertEvent> rebaseline(std::string_view alert_id, core::Timestamp at);

  [[nodiscard]] const std::optional<Alert>& open() const { return open_; }

 private:
  [[nodiscard]] AlertEvent close(AlertState to, core::Timestamp at, std::string cause,
                                 Notify notify);

  std::optional<Alert> open_;
  std::optional<core::Timestamp> last_run_at_;
  std::set<std::string> seen_ids_;
};

// One key's detector and alert lifecycle together: what the daemon keeps per key and what the
// backtest replays.
struct MonitorStep {
  KeyStep detection;
  std::optional<Alert> fired;
  std::vector<AlertEvent> events;
};

class KeyMonitor {
 public:
  KeyMonitor(KeyLabels key, DetectorParameters parameters);

  [[nodiscard]] MonitorStep observe(const Observation& run);
  [[nodiscard]] std::vector<AlertEvent> acknowledge(core::Timestamp at);
  // The operator accepts the new level: the open alert is rebaselined, the baseline restarts.
  [[nodiscard]] std::vector<AlertEvent> rebaseline(core::Timestamp at);

  [[nodiscard]] const KeyLabels& key() const { return key_; }
  [[nodiscard]] const KeyDetector& detector() const { return detector_; }
  [[nodiscard]] const AlertStateMachine& alerts() const { return alerts_; }

 private:
  KeyLabels key_;
  KeyDetector detector_;
  AlertStateMachine alerts_;
  std::string resolved_by_;  // externalId of the run that resolved the last alert
};

}  // namespace kernelwatch::detectors
