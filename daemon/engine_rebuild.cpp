// Engine::rebuild(): the detectors' state is not stored; it is replayed from the runs (every
// key's, in observedAt order, a cycle closing at each gap longer than cycle_gap, as the backtest
// replays them) with the operator's actions at their place in time.
#include <algorithm>

#include "daemon/engine.hpp"
#include "daemon/history.hpp"

namespace kernelwatch::daemon {

// What the replay leaves: each alert it fired, as its last event left it, and the runs the
// daemon judged whose cycle never closed ("<key identity>/<externalId>": a crash came between
// the run and the close).
struct Engine::Replay {
  std::map<std::string, detectors::AlertEvent> fired;
  std::set<std::string> unsettled;
};

core::Status Engine::rebuild() {
  ++generation_;
  watch_ = detectors::Watch(options_.parameters);
  key_ids_.clear();
  identities_.clear();
  unraised_.clear();
  const storage::AlertStore alerts(*store_);
  const auto actions = KW_TRY(alerts.actions());
  // Every key's labels; the runs stream in observedAt order, so a restart holds what the
  // detectors keep per key, not the history.
  const storage::RunStore runs(*store_);
  const auto labels = KW_TRY(key_labels_by_id(runs));
  for (const auto& [id, key] : labels) {
    key_ids_[key.identity()] = id;
    identities_[id] = key.identity();
  }
  Replay replayed = KW_TRY(replay(runs, labels, actions));
  return recover(alerts, std::move(replayed));
}

// The runs through the Watch, a cycle closing at each gap longer than cycle_gap, with the
// operator's actions at their place in time.
core::Result<Engine::Replay> Engine::replay(const storage::RunStore& runs,
                                            const std::map<std::int64_t, core::KeyLabels>& labels,
                                            const std::vector<storage::AlertActionRow>& actions) {
  Replay out;
  const auto collect = [&](std::vector<detectors::AlertEvent> events) {
    for (auto& event : events) {
      if (event.fired) {
        out.fired[event.alert.id] = std::move(event);
      } else if (const auto it = out.fired.find(event.alert.id); it != out.fired.end()) {
        it->second.alert = std::move(event.alert);
      }
    }
  };
  const auto replay_action = [&](const storage::AlertActionRow& action) {
    // An operator acts on alerts already decided: what the replay still holds is decided first.
    collect(watch_.close_cycle());
    const auto identity = identities_.find(action.key_id);
    if (identity == identities_.end()) return;
    (void)watch_.act(identity->second, action.alert_id,
                     action.action == storage::AlertAction::Rebaseline
                         ? detectors::OperatorAction::Rebaseline
                         : detectors::OperatorAction::Acknowledge,
                     action.at);
  };

  std::size_t next_action = 0;
  std::optional<core::Timestamp> previous;
  KW_TRY(runs.for_each_in_time_order([&](const storage::RunSummary& run) -> core::Status {
    const core::Timestamp at = run.observed_at;
    // Operator actions replay at their place in time, between the runs around them.
    while (next_action < actions.size() && actions[next_action].at <= at) {
      replay_action(actions[next_action++]);
    }
    if (previous && at - *previous > options_.parameters.controls.cycle_gap) {
      collect(watch_.close_cycle());
    }
    previous = at;
    const core::KeyLabels& key = labels.at(run.key_id);
    const auto observation = observation_of(run);
    if (run.judged == storage::Judged::CycleOpen) {
      out.unsettled.insert(key.identity() + "/" + observation.external_id);
    }
    collect(watch_.observe(key, observation, confirm_for(options_, run.source)).events);
    return {};
  }));
  collect(watch_.close_cycle());
  while (next_action < actions.size()) replay_action(actions[next_action++]);
  return out;
}

// Alerts whose firing run the daemon judged but whose cycle never closed are decided now and
// stored now; the other alerts the replay fired without a row are history's, not this daemon's.
core::Status Engine::recover(const storage::AlertStore& alerts, Replay replay) {
  const auto lost_by_a_crash = [&](const core::Alert& alert) {
    const auto judged_open = [&](const core::Alert& a) {
      return replay.unsettled.contains(a.key.identity() + "/" + a.fired.external_id);
    };
    return judged_open(alert) ||
           std::any_of(alert.members.begin(), alert.members.end(), judged_open);
  };
  std::vector<detectors::AlertEvent> recovered;
  for (auto& [id, event] : replay.fired) {
    if (KW_TRY(alerts.find(id))) continue;
    if (lost_by_a_crash(event.alert)) {
      recovered.push_back(std::move(event));
    } else {
      unraised_.insert(id);  // history's, not this daemon's
    }
  }
  if (recovered.empty() && replay.unsettled.empty()) return {};
  auto tx = KW_TRY(store_->begin());
  KW_TRY(store_events(tx, recovered, core::Timestamp::clock::now()));
  KW_TRY(storage::RunStore(*store_).close_judged_cycles(tx));
  return tx.commit();
}

}  // namespace kernelwatch::daemon
