#include "detectors/alert_state.hpp"

#include <utility>

namespace kernelwatch::detectors {
namespace {

AlertRun run_of(const Observation& run) {
  return AlertRun{run.external_id, run.observed_at, run.median};
}

}  // namespace

Alert make_alert(const KeyLabels& key, const Trigger& trigger) {
  Alert alert;
  alert.id = core::AlertId(key.identity() + "@" + trigger.onset.external_id +
                           (trigger.kind == AlertKind::Drift ? "/drift" : ""));
  alert.key = key;
  alert.kind = trigger.kind;
  alert.direction = trigger.direction;
  alert.fired = run_of(trigger.run);
  alert.onset = run_of(trigger.onset);
  alert.band = trigger.verdict.band;
  alert.baseline_runs = trigger.verdict.baseline_runs;
  alert.relative_change = trigger.verdict.relative_change;
  alert.attribution = trigger.attribution;
  alert.explanation = trigger.explanation;
  return alert;
}

std::optional<Notice> notice_due(AlertKind kind, AlertState state,
                                 const std::optional<Notice>& last_notice,
                                 const std::optional<core::Timestamp>& last_notified,
                                 core::Timestamp now, const AlertPolicy& policy) {
  if (kind == AlertKind::Environment) {
    return last_notice ? std::nullopt : std::optional<Notice>(Notice::Firing);
  }
  switch (state) {
    case AlertState::Firing:
      if (last_notice != Notice::Firing) return Notice::Firing;
      if (const auto due = reminder_due(state, last_notified, policy); due && *due <= now) {
        return Notice::Firing;
      }
      return std::nullopt;
    case AlertState::Acknowledged:  // announced once; acknowledged alerts are not repeated
      return last_notice ? std::nullopt : std::optional<Notice>(Notice::Firing);
    case AlertState::Resolved:
      return last_notice == Notice::Resolved ? std::nullopt
                                             : std::optional<Notice>(Notice::Resolved);
    case AlertState::Rebaselined:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<core::Timestamp> reminder_due(AlertState state,
                                            const std::optional<core::Timestamp>& last_notified,
                                            const AlertPolicy& policy) {
  if (state != AlertState::Firing || !last_notified) return std::nullopt;
  if (policy.repeat_interval.count() <= 0) return std::nullopt;  // 0: never repeat
  return *last_notified + policy.repeat_interval;
}

AlertEvent AlertStateMachine::close(AlertState to, core::Timestamp at, std::string cause,
                                    std::optional<AlertRun> closed_by) {
  AlertEvent event;
  event.from = open_->state;
  event.alert = std::move(*open_);
  event.at = at;
  event.cause = std::move(cause);
  event.alert.state = to;
  event.alert.closed_by = std::move(closed_by);
  open_.reset();
  return event;
}

std::vector<AlertEvent> AlertStateMachine::fire(const Alert& alert, core::Timestamp at) {
  std::vector<AlertEvent> events;
  if (!seen_ids_.insert(alert.id).second) return events;
  if (open_) {
    events.push_back(close(AlertState::Rebaselined, at, alert.onset.external_id, alert.onset));
  }
  open_ = alert;
  open_->state = AlertState::Firing;
  events.push_back({*open_, AlertState::Firing, at, alert.fired.external_id, true});
  return events;
}

std::vector<AlertEvent> AlertStateMachine::observe(const Observation& run) {
  std::vector<AlertEvent> events;
  if (last_run_at_ && run.observed_at <= *last_run_at_) return events;
  last_run_at_ = run.observed_at;
  if (!open_ || !run.judgeable() || !open_->band.contains(run.median)) return events;
  events.push_back(close(AlertState::Resolved, run.observed_at, run.external_id, run_of(run)));
  return events;
}

std::vector<AlertEvent> AlertStateMachine::acknowledge(const core::AlertId& alert_id,
                                                       core::Timestamp at) {
  std::vector<AlertEvent> events;
  if (!open_ || open_->id != alert_id || open_->state != AlertState::Firing) return events;
  open_->state = AlertState::Acknowledged;
  events.push_back({*open_, AlertState::Firing, at, "operator", false});
  return events;
}

std::vector<AlertEvent> AlertStateMachine::rebaseline(const core::AlertId& alert_id,
                                                      core::Timestamp at) {
  std::vector<AlertEvent> events;
  if (!open_ || open_->id != alert_id) return events;
  events.push_back(close(AlertState::Rebaselined, at, "operator", std::nullopt));
  return events;
}

const Alert* MonitorStep::fired() const {
  for (const auto& event : events) {
    if (event.fired) return &event.alert;
  }
  return nullptr;
}

KeyMonitor::KeyMonitor(KeyLabels key, DetectorParameters parameters)
    : key_(std::move(key)), detector_(std::move(parameters)) {}

// Failed runs: one `failed` alert per key while they keep failing; a passing run resolves it.
// Inconclusive runs (throttled, shared GPU) neither open nor close it.
std::vector<AlertEvent> KeyMonitor::observe_failures(const Observation& run) {
  std::vector<AlertEvent> events;
  if (core::is_failure(run.status) && !failed_) {
    Alert alert;
    alert.id = core::AlertId(key_.identity() + "@failed@" + run.external_id);
    alert.key = key_;
    alert.kind = AlertKind::Failed;
    alert.direction = Direction::Regression;
    alert.fired = run_of(run);
    alert.onset = alert.fired;
    alert.explanation = run.status_reason.empty() ? "the run failed" : run.status_reason;
    failed_ = alert;
    events.push_back(
        {std::move(alert), AlertState::Firing, run.observed_at, run.external_id, true});
  } else if (run.status == core::RunStatus::Passed && failed_) {
    AlertEvent event;
    event.from = failed_->state;
    event.alert = std::move(*failed_);
    event.at = run.observed_at;
    event.cause = run.external_id;
    event.alert.state = AlertState::Resolved;
    event.alert.closed_by = run_of(run);
    failed_.reset();
    events.push_back(std::move(event));
  }
  return events;
}

MonitorStep KeyMonitor::observe(const Observation& run, Firing firing) {
  MonitorStep step;
  step.events = alerts_.observe(run);
  for (const auto& event : step.events) {
    if (event.alert.state == AlertState::Resolved) resolved_by_ = run.external_id;
  }
  step.detection = detector_.observe(run);
  if (step.detection.trigger && firing == Firing::Immediate) {
    auto fired = fire(*step.detection.trigger);
    step.events.insert(step.events.end(), std::make_move_iterator(fired.begin()),
                       std::make_move_iterator(fired.end()));
  }
  auto failures = observe_failures(run);
  step.events.insert(step.events.end(), std::make_move_iterator(failures.begin()),
                     std::make_move_iterator(failures.end()));
  return step;
}

std::vector<AlertEvent> KeyMonitor::fire(const Trigger& trigger, const core::AlertId& incident,
                                         std::string_view note) {
  // A step whose first run resolved the open alert is that alert's return, not news.
  if (trigger.kind == AlertKind::Step && !resolved_by_.empty() &&
      trigger.onset.external_id == resolved_by_) {
    return {};
  }
  Alert alert = make_alert(key_, trigger);
  alert.incident = incident;
  if (!note.empty()) alert.explanation += "; " + std::string(note);
  return alerts_.fire(alert, trigger.run.observed_at);
}

std::vector<AlertEvent> KeyMonitor::act(const core::AlertId& alert_id, OperatorAction action,
                                        core::Timestamp at) {
  if (failed_ && failed_->id == alert_id) {
    // Acknowledged, it stays the key's open failed alert until a run passes; rebaselined, the
    // next failing run opens a new one.
    if (action == OperatorAction::Acknowledge && failed_->state != AlertState::Firing) return {};
    AlertEvent event = operator_close(*failed_, action, at);
    if (action == OperatorAction::Acknowledge) {
      failed_->state = AlertState::Acknowledged;
    } else {
      failed_.reset();
    }
    return {std::move(event)};
  }
  if (!alerts_.open() || alerts_.open()->id != alert_id) return {};
  if (action == OperatorAction::Acknowledge) return alerts_.acknowledge(alert_id, at);
  detector_.rebaseline();
  return alerts_.rebaseline(alert_id, at);
}

AlertEvent operator_close(Alert alert, OperatorAction action, core::Timestamp at) {
  const AlertState from = alert.state;
  alert.state =
      action == OperatorAction::Acknowledge ? AlertState::Acknowledged : AlertState::Rebaselined;
  return AlertEvent{std::move(alert), from, at, "operator", false};
}

}  // namespace kernelwatch::detectors
