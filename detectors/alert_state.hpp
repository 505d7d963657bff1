// The whole alert lifecycle of one key, emitted as events: step and drift alerts (firing ->
// acknowledged -> resolved when a run is back in the band the alert was raised against, or
// rebaselined), the `failed` alert (one while the key's runs keep failing, resolved by a passing
// run), operator actions, and when a notification is due. Idempotent under replay.
// Pure; standard library, core and detectors/ only.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "core/time.hpp"
#include "detectors/key_detector.hpp"
#include "detectors/observation.hpp"

namespace kernelwatch::detectors {

using core::Alert;
using core::AlertRun;
using core::AlertState;
using core::Notice;

[[nodiscard]] Alert make_alert(const KeyLabels& key, const Trigger& trigger);

// One change of one alert. The engine stores `alert` as it is; the backtest follows its state.
struct AlertEvent {
  Alert alert;                           // after the change: alert.state is the new state
  AlertState from = AlertState::Firing;  // equal to alert.state for a fresh alert
  core::Timestamp at{};
  std::string cause;   // externalId of the run, "operator", or "controls"
  bool fired = false;  // a new alert
};

using core::OperatorAction;  // core/alert.hpp

struct AlertPolicy {
  // A firing, unacknowledged alert is notified again this long after its last notification;
  // zero never repeats.
  std::chrono::nanoseconds repeat_interval = std::chrono::hours(24);
};

// What a notification must now say of an alert, decided from its current state and what was
// last notified (as Alertmanager does), never from how it got there: a firing alert not yet
// announced, or announced repeat_interval ago (a reminder; unless acknowledged) -> Firing; a
// resolved alert not yet announced as resolved -> Resolved; otherwise nothing. Rebaselined
// alerts (accepted by an operator or superseded) are not announced. An incident is announced
// once, when it fires: one notification per cause, never reminded. (Its members have no rows of
// their own and are never asked about: the incident's notification lists them.) Replaying history
// cannot change any input of this, so a restart never invents a notification.
[[nodiscard]] std::optional<Notice> notice_due(AlertKind kind, AlertState state,
                                               const std::optional<Notice>& last_notice,
                                               const std::optional<core::Timestamp>& last_notified,
                                               core::Timestamp now, const AlertPolicy& policy);

// When notice_due() next answers a reminder for a firing alert notified at `last_notified`.
[[nodiscard]] std::optional<core::Timestamp> reminder_due(
    AlertState state, const std::optional<core::Timestamp>& last_notified,
    const AlertPolicy& policy);

// The step/drift lifecycle of one key: at most one open alert.
class AlertStateMachine {
 public:
  // Opens an alert. An open alert of the key is closed as rebaselined (superseded: its level
  // was accepted as a segment). An id seen before is ignored (replay).
  [[nodiscard]] std::vector<AlertEvent> fire(const Alert& alert, core::Timestamp at);
  // A run of the key: resolves the open alert when its median is back inside the alert's band.
  // Runs not newer than the newest one seen are ignored (replay).
  [[nodiscard]] std::vector<AlertEvent> observe(const Observation& run);
  [[nodiscard]] std::vector<AlertEvent> acknowledge(const core::AlertId& alert_id,
                                                    core::Timestamp at);
  [[nodiscard]] std::vector<AlertEvent> rebaseline(const core::AlertId& alert_id,
                                                   core::Timestamp at);
  [[nodiscard]] const std::optional<Alert>& open() const { return open_; }

 private:
  [[nodiscard]] AlertEvent close(AlertState to, core::Timestamp at, std::string cause,
                                 std::optional<AlertRun> closed_by);

  std::optional<Alert> open_;
  std::optional<core::Timestamp> last_run_at_;
  std::set<core::AlertId> seen_ids_;
};

// What one run did to a key.
struct MonitorStep {
  KeyStep detection;
  std::vector<AlertEvent> events;  // fired, resolved, superseded: in the order they happened
  // The alert this run fired, if any (also in `events`).
  [[nodiscard]] const Alert* fired() const;
};

// Whether a trigger fires its alert as the run is observed, or is held for the caller (the
// Watch) to judge against the other keys of its cycle first.
enum class Firing { Immediate, Held };

// One key's detector and whole alert lifecycle: what the daemon keeps per key and what the
// backtest replays.
class KeyMonitor {
 public:
  KeyMonitor(KeyLabels key, DetectorParameters parameters);

  // With Firing::Held a step or drift trigger stays in detection.trigger, unfired: fire() it or
  // drop it (an environment incident took it).
  [[nodiscard]] MonitorStep observe(const Observation& run, Firing firing = Firing::Immediate);
  // KeyDetector::set_confirm: the policy of the runs that follow.
  void set_confirm(ConfirmPolicy confirm) { detector_.set_confirm(confirm); }
  // `incident`: the id of the incident the step is a member of ("" for the key's own alert);
  // `note`, when given, ends the alert's explanation (why the controls decided so).
  [[nodiscard]] std::vector<AlertEvent> fire(const Trigger& trigger,
                                             const core::AlertId& incident = {},
                                             std::string_view note = {});
  // An operator action on one of this key's open alerts (step, drift or failed). Rebaselining
  // the step alert also restarts the baseline. Unknown or closed ids change nothing.
  [[nodiscard]] std::vector<AlertEvent> act(const core::AlertId& alert_id, OperatorAction action,
                                            core::Timestamp at);

  [[nodiscard]] const KeyLabels& key() const { return key_; }
  [[nodiscard]] const KeyDetector& detector() const { return detector_; }
  [[nodiscard]] const std::optional<Alert>& open_alert() const { return alerts_.open(); }
  [[nodiscard]] const std::optional<Alert>& open_failed_alert() const { return failed_; }

 private:
  [[nodiscard]] std::vector<AlertEvent> observe_failures(const Observation& run);

  KeyLabels key_;
  KeyDetector detector_;
  AlertStateMachine alerts_;
  std::optional<Alert> failed_;  // the open `failed` alert
  std::string resolved_by_;      // externalId of the run that resolved the last alert
};

// An operator closing an alert the detectors no longer hold open (superseded while the store
// still shows it open): the same event the lifecycle would emit.
[[nodiscard]] AlertEvent operator_close(Alert alert, OperatorAction action, core::Timestamp at);

}  // namespace kernelwatch::detectors
