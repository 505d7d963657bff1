#include "detectors/watch.hpp"

#include <algorithm>
#include <utility>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

// Closed incidents remembered, so a member confirmed a cycle late joins the incident of its onset.
constexpr std::size_t kClosedIncidentsKept = 64;

void append(std::vector<AlertEvent>& to, std::vector<AlertEvent> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// "a, b and 3 more" of the names in `counts`, most frequent first, each with its count.
std::string some_names(const std::map<std::string, std::size_t>& counts, std::size_t shown) {
  std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (std::size_t i = 0; i < sorted.size() && i < shown; ++i) {
    text += (i == 0 ? "" : ", ") + sorted[i].first + " " + std::to_string(sorted[i].second);
  }
  if (sorted.size() > shown) text += " and " + std::to_string(sorted.size() - shown) + " more";
  return text;
}

}  // namespace

bool confirmed_by_a_sibling(const Trigger& trigger) {
  const auto& onset = *trigger.onset.placement;
  const auto& run = *trigger.run.placement;
  return trigger.kind == AlertKind::Step && !onset.empty() && !run.empty() &&
         (onset.host != run.host || onset.unit() != run.unit());
}

core::AlertState incident_state(const std::vector<Alert>& members) {
  const auto any = [&](AlertState state) {
    return std::any_of(members.begin(), members.end(),
                       [&](const Alert& m) { return m.state == state; });
  };
  if (any(AlertState::Firing)) return AlertState::Firing;
  if (any(AlertState::Acknowledged)) return AlertState::Acknowledged;
  if (any(AlertState::Resolved)) return AlertState::Resolved;
  return AlertState::Rebaselined;
}

std::vector<SharedChange> shared_changes(const std::vector<Alert>& members) {
  // Per field, how many members show it changed and its most common change.
  std::map<std::string, std::map<std::pair<std::string, std::string>, std::size_t>> by_field;
  for (const auto& member : members) {
    for (const auto& change : member.attribution)
      ++by_field[change.field][{change.from, change.to}];
  }
  std::vector<SharedChange> out;
  for (const auto& [field, changes] : by_field) {
    std::size_t total = 0;
    const std::pair<std::string, std::string>* common = nullptr;
    std::size_t most = 0;
    for (const auto& [change, count] : changes) {
      total += count;
      if (count > most) {
        most = count;
        common = &change;
      }
    }
    if (4 * total < members.size()) continue;
    out.push_back({{field, common->first, common->second}, total});
  }
  // A changed digest says nothing more than the changed version beside it.
  const bool version = std::any_of(out.begin(), out.end(), [](const SharedChange& c) {
    return c.change.field == "implementation.version";
  });
  if (version) {
    std::erase_if(out,
                  [](const SharedChange& c) { return c.change.field == "implementation.digest"; });
  }
  std::stable_sort(out.begin(), out.end(), [](const SharedChange& a, const SharedChange& b) {
    return a.members > b.members;
  });
  return out;
}

std::string describe_incident(const Alert& incident, const Controls& controls) {
  const auto& members = incident.members;
  std::map<std::string, std::size_t> benchmarks;
  std::map<std::string, std::size_t> providers;
  std::size_t references = 0;
  std::size_t slower = 0;
  for (const auto& member : members) {
    ++benchmarks[member.key.benchmark];
    ++providers[member.key.provider];
    references += controls.is_reference(member.key.provider) ? 1 : 0;
    slower += member.direction == Direction::Regression ? 1 : 0;
  }
  std::string text = std::to_string(members.size()) + " key(s) of " + incident.key.environment +
                     " stepped in one cycle (" + std::to_string(slower) + " slower, " +
                     std::to_string(members.size() - slower) + " faster; median " +
                     core::format_change(incident.relative_change) +
                     "); benchmarks: " + some_names(benchmarks, 4) +
                     "; providers: " + some_names(providers, 4) + ". ";
  const auto shared = shared_changes(members);
  const bool host_moved = std::any_of(shared.begin(), shared.end(), [&](const SharedChange& c) {
    return c.change.field == "host" && c.members == members.size();
  });
  if (host_moved) {
    text +=
        "Every key's step began at a run on another host than the run before it: this "
        "host against the other hosts' runs (a new host judged by its fleet's runs, "
        "storage.warm_start), not necessarily the code.";
  } else if (references == 0) {
    text +=
        "Only subjects stepped, no reference of theirs did: a change they share (their "
        "implementation, or a dependency such as Triton), not the host.";
  } else if (references == members.size()) {
    text += "Only references stepped: the host, a dependency or the benchmark changed.";
  } else {
    text += std::to_string(references) +
            " reference(s) stepped with the subjects: the host, a dependency or the benchmark "
            "changed.";
  }
  if (shared.empty()) {
    text += " The runs record no change of software, implementation or version at that run.";
  } else {
    text += " What changed at that run:";
    for (std::size_t i = 0; i < shared.size(); ++i) {
      text += (i == 0 ? " " : "; ") + describe({shared[i].change}) + " (in " +
              std::to_string(shared[i].members) + " of " + std::to_string(members.size()) +
              " keys)";
    }
    text += ".";
  }
  return text;
}

Watch::Watch(DetectorParameters parameters)
    : parameters_(std::move(parameters)), controls_(parameters_.controls) {}

MonitorStep Watch::observe(const KeyLabels& key, const Observation& run, ConfirmPolicy confirm) {
  return observe(key, run, confirm, /*for_controls=*/true);
}

MonitorStep Watch::observe_seed(const KeyLabels& key, const Observation& run,
                                ConfirmPolicy confirm) {
  fleet_.keep(key.identity(), run);
  return observe(key, run, confirm, /*for_controls=*/false);
}

void Watch::add_fleet_run(const KeyLabels& key, const Observation& run, core::Timestamp for_step) {
  fleet_.add(key.identity(), run, for_step);
}

std::vector<HeldStep> Watch::held_steps() const {
  std::vector<HeldStep> out;
  out.reserve(held_.size());
  for (const auto& h : held_) out.push_back({&keys_.at(h.key_identity).monitor->key(), &h.trigger});
  return out;
}

MonitorStep Watch::observe(const KeyLabels& key, const Observation& run, ConfirmPolicy confirm,
                           bool for_controls) {
  const std::string identity = key.identity();
  std::vector<AlertEvent> closed;
  const auto held = std::find_if(held_.begin(), held_.end(),
                                 [&](const Held& h) { return h.key_identity == identity; });
  // A step one GPU's (or host's) breach and a sibling's confirmed waits for the cycle's other
  // runs of the key: two slow GPUs next to each other must not be a step of the code.
  const bool deferred = held != held_.end() && confirmed_by_a_sibling(held->trigger);
  // Only the held steps: the siblings are judged when the whole cycle is in (close_cycle()).
  if (held != held_.end() && !deferred) closed = close_steps();

  KeyState& state = keys_[identity];
  if (!state.monitor) {
    DetectorParameters parameters = parameters_;
    parameters.confirm = confirm;
    state.monitor = std::make_unique<KeyMonitor>(key, std::move(parameters));
    state.view.monitor = state.monitor.get();
  }
  state.monitor->set_confirm(confirm);  // the policy of this run's source (imported or own)
  MonitorStep step = state.monitor->observe(run, Firing::Held);
  if (deferred && step.detection.role == RunRole::Returned) {
    // A later sibling's run is back in the old band: the step was two siblings out of line.
    std::erase_if(held_, [&](const Held& h) { return h.key_identity == identity; });
  }
  state.view.last_run = LastRun{run.external_id, run.observed_at, run.status, run.median};
  if (run.judgeable()) {
    state.view.last_verdict = step.detection.verdict;
    if (for_controls) controls_.record(key, run, step.detection.verdict);
  }
  if (step.detection.trigger) held_.push_back({identity, *step.detection.trigger});
  follow_members(step.events);
  if (!closed.empty()) {
    append(closed, std::move(step.events));
    step.events = std::move(closed);
  }
  return step;
}

std::optional<std::string> Watch::seed(const KeyLabels& key, std::span<const Observation> runs,
                                       ConfirmPolicy confirm) {
  const std::string identity = key.identity();
  if (keys_.contains(identity)) return "the key is already watched";
  if (runs.empty()) return "no run";
  Watch scratch(parameters_);
  RunRole last = RunRole::Ignored;
  for (const auto& run : runs) {
    const MonitorStep step = scratch.observe_seed(key, run, confirm);
    if (!step.events.empty() || step.detection.trigger) {
      return "its runs moved (" + step.detection.verdict.explanation + ")";
    }
    last = step.detection.role;
  }
  KeyState& seeded = scratch.keys_.at(identity);
  if (last == RunRole::Pending) return "its newest run breached its band and awaits confirmation";
  if (seeded.monitor->open_alert() || seeded.monitor->open_failed_alert()) {
    return "an alert of it is open";
  }
  keys_.emplace(identity, std::move(seeded));
  for (const auto& run : runs) fleet_.keep(identity, run);
  return std::nullopt;
}

std::vector<AlertEvent> Watch::act(const std::string& key_identity, const core::AlertId& alert_id,
                                   OperatorAction action, core::Timestamp at) {
  const auto it = keys_.find(key_identity);
  if (it == keys_.end()) return {};
  auto events = it->second.monitor->act(alert_id, action, at);
  follow_members(events);
  return events;
}

std::vector<AlertEvent> Watch::act_on_incident(const core::AlertId& incident_id,
                                               OperatorAction action, core::Timestamp at) {
  const Alert* incident = find_incident(incident_id);
  if (incident == nullptr) return {};
  std::vector<AlertEvent> events;
  const std::vector<Alert> members = incident->members;  // acting changes the incident
  for (const auto& member : members) {
    if (!core::is_open(member.state)) continue;
    const auto it = keys_.find(member.key.identity());
    if (it == keys_.end()) continue;
    append(events, it->second.monitor->act(member.id, action, at));
  }
  for (auto& event : events) event.cause = "operator";
  follow_members(events);
  return events;
}

std::vector<AlertEvent> Watch::act_on_unit(const core::AlertId& alert_id, OperatorAction action,
                                           core::Timestamp at) {
  for (auto& [slot, alert] : unit_alerts_) {
    if (alert.id != alert_id) continue;
    // As a key's alert: acknowledged once (again changes nothing), rebaselined while open.
    if (action == OperatorAction::Acknowledge ? alert.state != AlertState::Firing
                                              : !core::is_open(alert.state)) {
      return {};
    }
    AlertEvent event = operator_close(alert, action, at);
    alert = event.alert;
    return {std::move(event)};
  }
  return {};
}

Alert* Watch::find_incident(const core::AlertId& id) {
  const auto it = std::find_if(incidents_.begin(), incidents_.end(),
                               [&](const Alert& a) { return a.id == id; });
  return it == incidents_.end() ? nullptr : &*it;
}

const Alert* Watch::incident(const core::AlertId& id) const {
  const auto it = std::find_if(incidents_.begin(), incidents_.end(),
                               [&](const Alert& a) { return a.id == id; });
  return it == incidents_.end() ? nullptr : &*it;
}

void Watch::follow_members(std::vector<AlertEvent>& events) {
  std::vector<AlertEvent> moved;
  for (const auto& event : events) {
    if (event.fired || !core::is_incident_member(event.alert)) continue;
    Alert* incident = find_incident(event.alert.incident);
    if (incident == nullptr) continue;
    for (auto& member : incident->members) {
      if (member.id == event.alert.id) member = event.alert;
    }
    const AlertState before = incident->state;
    incident->state = incident_state(incident->members);
    if (std::none_of(moved.begin(), moved.end(),
                     [&](const AlertEvent& e) { return e.alert.id == incident->id; })) {
      moved.push_back(AlertEvent{*incident, before, event.at, event.cause, false});
    }
  }
  for (auto& event : moved) {
    const Alert* incident = find_incident(event.alert.id);
    event.alert = *incident;  // with every member change of these events
    events.push_back(std::move(event));
  }
}

std::vector<AlertEvent> Watch::judge_units() {
  std::vector<AlertEvent> events;
  for (const auto& cycle : controls_.placed_cycles()) {
    const core::AlertRun at{"cycle@" + core::format_timestamp(cycle.start), cycle.newest, {}};
    // Open alerts of this environment whose unit is back in line.
    for (auto it = unit_alerts_.begin(); it != unit_alerts_.end();) {
      Alert& alert = it->second;
      // Only the runs since it fired (one controls cycle may span several daemon cycles).
      std::vector<PlacedRun> since;
      if (alert.key.environment == cycle.environment) {
        for (const auto& run : cycle.runs) {
          if (run.at > alert.fired.observed_at) since.push_back(run);
        }
      }
      if (since.empty() || !back_in_line(since, alert.onset.external_id, parameters_.controls)) {
        ++it;
        continue;
      }
      if (!core::is_open(alert.state)) {  // rebaselined: closed already, forgotten now
        it = unit_alerts_.erase(it);
        continue;
      }
      const AlertState from = alert.state;
      alert.state = AlertState::Resolved;
      alert.closed_by = at;
      events.push_back(AlertEvent{alert, from, cycle.newest, "siblings", false});
      it = unit_alerts_.erase(it);
    }
    for (const auto& out : out_of_line(cycle.runs, parameters_.controls)) {
      const std::string slot = cycle.environment + " " + out.unit_id().str();
      if (unit_alerts_.contains(slot)) continue;  // still out of line: already said
      Alert alert;
      alert.id = core::AlertId(cycle.environment + "@" + out.unit_id().str() + "@" +
                               core::format_timestamp(cycle.newest));
      alert.kind = AlertKind::Environment;
      alert.key.environment = cycle.environment;
      alert.direction = out.direction;
      alert.state = AlertState::Firing;
      alert.onset = core::AlertRun{out.unit_id().str(), cycle.start, {}};
      alert.fired = core::AlertRun{out.unit_id().str(), cycle.newest, {}};
      alert.relative_change = out.relative_change;
      alert.placement = out.placement;
      for (const auto& identity : out.keys) {
        const auto key = keys_.find(identity);
        if (key != keys_.end()) alert.keys.push_back(key->second.monitor->key());
      }
      std::sort(alert.keys.begin(), alert.keys.end(),
                [](const KeyLabels& a, const KeyLabels& b) { return a.display() < b.display(); });
      alert.explanation =
          out.describe() + " in the cycle of " + core::format_timestamp(cycle.start) + ": " +
          (out.host_level ? "the host" : "the GPU") +
          ", not the code (its siblings ran the same benchmarks in band); no key alert is raised";
      events.push_back(AlertEvent{alert, AlertState::Firing, cycle.newest, "siblings", true});
      unit_alerts_.emplace(slot, std::move(alert));
    }
  }
  controls_.clear_placed();
  return events;
}

std::vector<AlertEvent> Watch::close_cycle() {
  std::vector<AlertEvent> events = judge_units();
  append(events, close_steps(/*with_fleet=*/true));
  fleet_.settle();
  return events;
}

std::vector<AlertEvent> Watch::close_steps(bool with_fleet) {
  std::vector<AlertEvent> events;
  if (held_.empty()) return events;
  std::vector<Held> held = std::move(held_);
  held_.clear();

  std::vector<HeldStep> steps;
  steps.reserve(held.size());
  for (const auto& h : held)
    steps.push_back({&keys_.at(h.key_identity).monitor->key(), &h.trigger});
  auto decisions = controls_.decide(steps, [&](const core::AlertId& id) -> std::size_t {
    const Alert* known = find_incident(id);
    return known == nullptr ? 0 : known->members.size();
  });
  if (with_fleet) decide_by_fleet(steps, decisions);

  std::map<core::AlertId, std::vector<Alert>> joined;
  for (std::size_t i = 0; i < held.size(); ++i) {
    KeyMonitor& monitor = *keys_.at(held[i].key_identity).monitor;
    const StepDecision& decision = decisions[i];
    if (!decision.incident) {
      append(events, monitor.fire(held[i].trigger, {}, decision.own_reason));
      continue;
    }
    auto fired = monitor.fire(held[i].trigger, decision.incident->incident,
                              "incident: " + decision.incident->reason);
    for (const auto& event : fired) {
      if (event.fired) joined[decision.incident->incident].push_back(event.alert);
    }
    append(events, std::move(fired));
  }
  follow_members(events);  // members of older incidents superseded by these steps
  for (auto& [id, members] : joined)
    events.push_back(join_incident(id, std::move(members), "controls"));
  return events;
}

AlertEvent Watch::join_incident(const core::AlertId& id, std::vector<Alert> members,
                                const std::string& cause) {
  AlertEvent event;
  event.cause = cause;
  Alert* known = find_incident(id);
  if (known != nullptr) {
    for (auto& member : known->members) {
      const bool replaced = std::any_of(members.begin(), members.end(),
                                        [&](const Alert& m) { return m.id == member.id; });
      if (!replaced) members.push_back(std::move(member));
    }
    event.from = known->state;
  } else {
    event.fired = true;
  }
  {  // By display, then id: each display made once (an incident may have thousands of members).
    std::vector<std::pair<std::string, std::size_t>> order;
    order.reserve(members.size());
    for (std::size_t i = 0; i < members.size(); ++i)
      order.emplace_back(members[i].key.display(), i);
    std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : members[a.second].id < members[b.second].id;
    });
    std::vector<Alert> sorted;
    sorted.reserve(members.size());
    for (const auto& [display, i] : order) sorted.push_back(std::move(members[i]));
    members = std::move(sorted);
  }

  Alert incident;
  incident.id = id;
  incident.kind = AlertKind::Environment;
  incident.key.environment = members.front().key.environment;
  incident.incident = id;
  incident.onset = members.front().onset;
  incident.fired = members.front().fired;
  std::size_t slower = 0;
  for (const auto& member : members) {
    if (member.onset.observed_at < incident.onset.observed_at) incident.onset = member.onset;
    if (member.fired.observed_at > incident.fired.observed_at) incident.fired = member.fired;
    slower += member.direction == Direction::Regression ? 1 : 0;
  }
  incident.direction =
      2 * slower >= members.size() ? Direction::Regression : Direction::Improvement;
  std::vector<double> changes;
  for (const auto& member : members) {
    if (member.direction == incident.direction) changes.push_back(member.relative_change);
  }
  incident.relative_change = median(changes);
  for (const auto& shared : shared_changes(members)) incident.attribution.push_back(shared.change);
  incident.members = std::move(members);
  incident.state = incident_state(incident.members);
  incident.explanation = describe_incident(incident, controls_);
  if (const auto host = host_incidents_.find(id); host != host_incidents_.end()) {
    incident.placement = host->second.placement;
    incident.relative_change = host->second.against_fleet;
    incident.explanation = host->second.text + " " + incident.explanation;
  }
  if (event.fired) event.from = incident.state;
  event.alert = incident;
  event.at = incident.fired.observed_at;

  if (known != nullptr) {
    *known = std::move(incident);
  } else {
    incidents_.push_back(std::move(incident));
    // Forget the oldest closed incidents beyond the few kept; open ones stay while they are open.
    std::size_t closed = 0;
    for (const auto& i : incidents_) closed += core::is_open(i.state) ? 0 : 1;
    for (auto it = incidents_.begin(); closed > kClosedIncidentsKept && it != incidents_.end();) {
      if (core::is_open(it->state)) {
        ++it;
      } else {
        it = incidents_.erase(it);
        --closed;
      }
    }
    std::erase_if(host_incidents_, [&](const auto& host) {
      return std::none_of(incidents_.begin(), incidents_.end(),
                          [&](const Alert& i) { return i.id == host.first; });
    });
  }
  return event;
}

const Watch::KeyView* Watch::find(const std::string& key_identity) const {
  const auto it = keys_.find(key_identity);
  return it == keys_.end() ? nullptr : &it->second.view;
}

std::vector<const Watch::KeyView*> Watch::keys() const {
  std::vector<std::pair<const std::string*, const KeyView*>> sorted;
  sorted.reserve(keys_.size());
  for (const auto& [identity, state] : keys_) sorted.emplace_back(&identity, &state.view);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  std::vector<const KeyView*> out;
  out.reserve(sorted.size());
  for (const auto& [identity, view] : sorted) out.push_back(view);
  return out;
}

}  // namespace kernelwatch::detectors
