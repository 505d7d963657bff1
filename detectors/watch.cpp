#include "detectors/watch.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

// Incidents remembered to merge members that arrive in a later close of the same cycle.
constexpr std::size_t kIncidentsKept = 64;

void append(std::vector<AlertEvent>& to, std::vector<AlertEvent> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

Watch::Watch(DetectorParameters parameters)
    : parameters_(std::move(parameters)), controls_(parameters_.controls) {}

MonitorStep Watch::observe(const KeyLabels& key, const Observation& run, ConfirmPolicy confirm) {
  const std::string identity = key.identity();
  std::vector<AlertEvent> closed;
  const bool holds = std::any_of(held_.begin(), held_.end(),
                                 [&](const Held& h) { return h.key_identity == identity; });
  if (holds) closed = close_cycle();

  KeyState& state = keys_[identity];
  if (!state.monitor) {
    DetectorParameters parameters = parameters_;
    parameters.confirm = confirm;
    state.monitor = std::make_unique<KeyMonitor>(key, std::move(parameters));
    state.view.monitor = state.monitor.get();
  }
  state.monitor->set_confirm(confirm);  // the policy of this run's source (imported or own)
  MonitorStep step = state.monitor->observe(run, Firing::Held);
  state.view.last_run = LastRun{run.external_id, run.observed_at, run.status, run.median};
  if (run.judgeable()) {
    state.view.last_verdict = step.detection.verdict;
    controls_.record(key, run, step.detection.verdict);
  }
  if (step.detection.trigger) held_.push_back({identity, *step.detection.trigger});
  if (!closed.empty()) {
    append(closed, std::move(step.events));
    step.events = std::move(closed);
  }
  return step;
}

std::vector<AlertEvent> Watch::act(const std::string& key_identity, std::string_view alert_id,
                                   OperatorAction action, core::Timestamp at) {
  const auto it = keys_.find(key_identity);
  if (it == keys_.end()) return {};
  return it->second.monitor->act(alert_id, action, at);
}

std::vector<AlertEvent> Watch::close_cycle() {
  std::vector<AlertEvent> events;
  if (held_.empty()) return events;
  std::vector<Held> held = std::move(held_);
  held_.clear();

  // Each step against its onset's cycle: the environment's (an incident member) or its own.
  std::map<std::string, std::vector<Alert>> incidents;
  for (const auto& h : held) {
    KeyMonitor& monitor = *keys_.at(h.key_identity).monitor;
    if (h.trigger.kind == AlertKind::Step) {
      if (const auto why = controls_.environment_reason(monitor.key(), h.trigger)) {
        Alert member = make_alert(monitor.key(), h.trigger);
        member.kind = AlertKind::Environment;
        member.incident = why->incident;
        member.explanation += "; environment: " + why->reason;
        incidents[why->incident].push_back(std::move(member));
        continue;
      }
    }
    append(events, monitor.fire(h.trigger));
  }
  for (auto& [id, members] : incidents) events.push_back(incident_event(std::move(members)));
  return events;
}

AlertEvent Watch::incident_event(std::vector<Alert> members) {
  const std::string id = members.front().incident;
  AlertEvent event;
  event.cause = "controls";
  const auto known = std::find_if(incidents_.begin(), incidents_.end(),
                                  [&](const Alert& a) { return a.id == id; });
  if (known != incidents_.end()) {
    for (auto& member : known->members) {
      const bool replaced = std::any_of(members.begin(), members.end(),
                                        [&](const Alert& m) { return m.id == member.id; });
      if (!replaced) members.push_back(std::move(member));
    }
  } else {
    event.fired = true;
  }
  std::sort(members.begin(), members.end(),
            [](const Alert& a, const Alert& b) { return a.key.display() < b.key.display(); });

  Alert incident;
  incident.id = id;
  incident.kind = AlertKind::Environment;
  incident.direction = members.front().direction;
  // Born closed: the members' baselines already restarted at the new level. It is announced
  // once (notice_due) and never reminded.
  incident.state = AlertState::Rebaselined;
  incident.key.environment = members.front().key.environment;
  incident.incident = id;
  incident.onset = members.front().onset;
  incident.fired = members.front().fired;
  std::vector<double> changes;
  for (const auto& member : members) {
    if (member.onset.observed_at < incident.onset.observed_at) incident.onset = member.onset;
    if (member.fired.observed_at > incident.fired.observed_at) incident.fired = member.fired;
    changes.push_back(member.relative_change);
  }
  incident.relative_change = median(changes);
  char change[32];
  std::snprintf(change, sizeof change, "%+.1f%%", incident.relative_change * 100);
  incident.explanation = std::to_string(members.size()) + " key(s) of " + incident.key.environment +
                         " moved the same way in one cycle (median " + change +
                         "): an environment change, not a kernel change";
  incident.members = std::move(members);
  event.alert = incident;
  event.from = incident.state;
  event.at = incident.fired.observed_at;

  if (known != incidents_.end()) {
    *known = std::move(incident);
  } else {
    incidents_.push_back(std::move(incident));
    if (incidents_.size() > kIncidentsKept) incidents_.pop_front();
  }
  return event;
}

const Watch::KeyView* Watch::find(const std::string& key_identity) const {
  const auto it = keys_.find(key_identity);
  return it == keys_.end() ? nullptr : &it->second.view;
}

std::vector<const Watch::KeyView*> Watch::keys() const {
  std::vector<const KeyView*> out;
  out.reserve(keys_.size());
  for (const auto& [identity, state] : keys_) out.push_back(&state.view);
  return out;
}

}  // namespace kernelwatch::detectors
