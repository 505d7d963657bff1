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
  // Whatever the replay finds (or fails to), every key's cached pages are dropped after it.
  struct PublishAll {
    Engine& engine;
    ~PublishAll() { engine.publish_all(); }
  } publish_all{*this};
  watch_ = detectors::Watch(options_.parameters);
  key_ids_.clear();
  identities_.clear();
  storage::AlertStore alerts(*store_);
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
        it->second.at = event.at;
      }
    }
  };
  const auto replay_action = [&](const storage::AlertActionRow& action) {
    // An operator acts on alerts already decided: what the replay still holds is decided first.
    collect(watch_.close_cycle());
    const auto identity = identities_.find(action.key_id);
    if (identity == identities_.end()) return;
    collect(watch_.act(identity->second, action.alert_id,
                       action.action == storage::AlertAction::Rebaseline
                           ? detectors::OperatorAction::Rebaseline
                           : detectors::OperatorAction::Acknowledge,
                       action.at));
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
    const auto confirm =
        run.judged == storage::Judged::Never ? kHistoryConfirm : confirm_for(options_, run.source);
    collect(watch_.observe(key, observation, confirm).events);
    return {};
  }));
  collect(watch_.close_cycle());
  while (next_action < actions.size()) replay_action(actions[next_action++]);
  return out;
}

// Alerts whose firing run the daemon judged but whose cycle never closed are decided now and
// stored now, to be notified. The other alerts the replay fired without a row are imported
// history's: stored with origin history (never notified), and brought up to date when history
// imported since the last start moved them on. The daemon's own rows stay as they are.
core::Status Engine::recover(storage::AlertStore& alerts, Replay replay) {
  const auto lost_by_a_crash = [&](const core::Alert& alert) {
    const auto judged_open = [&](const core::Alert& a) {
      return replay.unsettled.contains(a.key.identity() + "/" + a.fired.external_id);
    };
    return judged_open(alert) ||
           std::any_of(alert.members.begin(), alert.members.end(), judged_open);
  };
  std::vector<detectors::AlertEvent> recovered;
  std::vector<storage::AlertRow> history;
  for (auto& [id, event] : replay.fired) {
    const auto row = KW_TRY(alerts.find(id));
    if (row && row->origin == storage::AlertOrigin::Daemon) continue;
    if (!row && lost_by_a_crash(event.alert)) {
      recovered.push_back(std::move(event));
      continue;
    }
    if (row && core::to_json(row->alert) == core::to_json(event.alert)) continue;
    storage::AlertRow updated;
    updated.alert = std::move(event.alert);
    updated.key_id = updated.alert.members.empty() ? key_id_of(updated.alert.key) : std::nullopt;
    updated.updated_at = row ? row->updated_at : event.at;
    updated.origin = storage::AlertOrigin::History;
    history.push_back(std::move(updated));
  }
  std::vector<std::string> stale;
  history_alerts_.clear();
  for (const auto& row : history) history_alerts_.insert(row.alert.id);
  for (const auto& row : KW_TRY(alerts.list(std::nullopt, 0))) {
    if (row.origin != storage::AlertOrigin::History) continue;
    if (replay.fired.contains(row.alert.id)) {
      history_alerts_.insert(row.alert.id);
    } else {
      stale.push_back(row.alert.id);
    }
  }
  if (recovered.empty() && history.empty() && stale.empty() && replay.unsettled.empty()) {
    return {};
  }
  auto tx = KW_TRY(store_->begin());
  for (const auto& row : history) KW_TRY(alerts.upsert(tx, row));
  for (const auto& id : stale) KW_TRY(alerts.remove_history(tx, id));
  KW_TRY(store_events(tx, recovered, core::Timestamp::clock::now()));
  KW_TRY(storage::RunStore(*store_).close_judged_cycles(tx));
  return tx.commit();
}

}  // namespace kernelwatch::daemon
