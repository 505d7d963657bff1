#include "detectors/alert_state.hpp"

#include <utility>

namespace kernelwatch::detectors {

std::string_view to_string(AlertState state) noexcept {
  switch (state) {
    case AlertState::Firing:
      return "firing";
    case AlertState::Acknowledged:
      return "acknowledged";
    case AlertState::Resolved:
      return "resolved";
    case AlertState::Rebaselined:
      return "rebaselined";
  }
  return "unknown";
}

std::string_view to_string(Notify notify) noexcept {
  switch (notify) {
    case Notify::None:
      return "none";
    case Notify::Fired:
      return "fired";
    case Notify::Resolved:
      return "resolved";
  }
  return "unknown";
}

Alert make_alert(const KeyLabels& key, const Trigger& trigger) {
  Alert alert;
  alert.id = (key.digest.empty() ? key.display() : key.digest) + "@" + trigger.onset.external_id +
             (trigger.kind == AlertKind::Drift ? "/drift" : "");
  alert.key = key;
  alert.kind = trigger.kind;
  alert.direction = trigger.direction;
  alert.external_id = trigger.run.external_id;
  alert.observed_at = trigger.run.observed_at;
  alert.onset_external_id = trigger.onset.external_id;
  alert.onset_observed_at = trigger.onset.observed_at;
  alert.median = trigger.run.median;
  alert.band = trigger.verdict.band;
  alert.baseline_runs = trigger.verdict.baseline_external_ids.size();
  alert.relative_change = trigger.verdict.relative_change;
  alert.attribution = trigger.attribution;
  alert.explanation = trigger.explanation;
  return alert;
}

std::optional<core::Timestamp> reminder_due(AlertState state,
                                            const std::optional<core::Timestamp>& last_notified,
                                            const AlertPolicy& policy) {
  if (state != AlertState::Firing || !last_notified) return std::nullopt;
  if (policy.repeat_interval.count() <= 0) return std::nullopt;  // 0: never repeat
  return *last_notified + policy.repeat_interval;
}

AlertEvent AlertStateMachine::close(AlertState to, core::Timestamp at, std::string cause,
                                    Notify notify) {
  AlertEvent event{open_->id, open_->state, to, at, std::move(cause), notify};
  open_.reset();
  return event;
}

std::vector<AlertEvent> AlertStateMachine::fire(const Alert& alert, core::Timestamp at) {
  std::vector<AlertEvent> events;
  if (!seen_ids_.insert(alert.id).second) return events;
  if (open_)
    events.push_back(close(AlertState::Rebaselined, at, alert.onset_external_id, Notify::None));
  open_ = alert;
  open_->state = AlertState::Firing;
  events.push_back(
      {alert.id, AlertState::Firing, AlertState::Firing, at, alert.external_id, Notify::Fired});
  return events;
}

std::vector<AlertEvent> AlertStateMachine::observe(const Observation& run) {
  std::vector<AlertEvent> events;
  if (last_run_at_ && run.observed_at <= *last_run_at_) return events;
  last_run_at_ = run.observed_at;
  if (!open_ || !run.judgeable() || !open_->band.contains(run.median)) return events;
  events.push_back(close(AlertState::Resolved, run.observed_at, run.external_id, Notify::Resolved));
  return events;
}

std::vector<AlertEvent> AlertStateMachine::acknowledge(std::string_view alert_id,
                                                       core::Timestamp at) {
  std::vector<AlertEvent> events;
  if (!open_ || open_->id != alert_id || open_->state != AlertState::Firing) return events;
  events.push_back(
      {open_->id, AlertState::Firing, AlertState::Acknowledged, at, "operator", Notify::None});
  open_->state = AlertState::Acknowledged;
  return events;
}

std::vector<AlertEvent> AlertStateMachine::rebaseline(std::string_view alert_id,
                                                      core::Timestamp at) {
  std::vector<AlertEvent> events;
  if (!open_ || open_->id != alert_id) return events;
  events.push_back(close(AlertState::Rebaselined, at, "operator", Notify::None));
  return events;
}

KeyMonitor::KeyMonitor(KeyLabels key, DetectorParameters parameters)
    : key_(std::move(key)), detector_(std::move(parameters)) {}

MonitorStep KeyMonitor::observe(const Observation& run) {
  MonitorStep step;
  step.events = alerts_.observe(run);
  for (const auto& event : step.events) {
    if (event.to == AlertState::Resolved) resolved_by_ = run.external_id;
  }
  step.detection = detector_.observe(run);
  if (!step.detection.trigger) return step;
  const Trigger& trigger = *step.detection.trigger;
  // A step whose first run resolved the open alert is that alert's return, not news.
  if (trigger.kind == AlertKind::Step && !resolved_by_.empty() &&
      trigger.onset.external_id == resolved_by_) {
    return step;
  }
  Alert alert = make_alert(key_, trigger);
  auto fired = alerts_.fire(alert, trigger.run.observed_at);
  if (fired.empty()) return step;  // replayed
  step.events.insert(step.events.end(), fired.begin(), fired.end());
  step.fired = std::move(alert);
  return step;
}

std::vector<AlertEvent> KeyMonitor::acknowledge(core::Timestamp at) {
  if (!alerts_.open()) return {};
  return alerts_.acknowledge(alerts_.open()->id, at);
}

std::vector<AlertEvent> KeyMonitor::rebaseline(core::Timestamp at) {
  detector_.rebaseline();
  if (!alerts_.open()) return {};
  return alerts_.rebaseline(alerts_.open()->id, at);
}

}  // namespace kernelwatch::detectors
