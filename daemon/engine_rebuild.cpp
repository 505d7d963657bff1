// Engine::rebuild(): the detectors' state is not stored; it is replayed from the runs (every
// key's, in observedAt order, a cycle closing at each gap longer than cycle_gap, as the backtest
// replays them) with the operator's actions at their place in time.
#include <algorithm>

#include "daemon/engine.hpp"

namespace kernelwatch::daemon {
namespace {

struct ReplayItem {
  const storage::StoredRun* run;
  const core::KeyLabels* key;
};

}  // namespace

core::Status Engine::rebuild() {
  ++generation_;
  watch_ = detectors::Watch(options_.parameters);
  key_ids_.clear();
  identities_.clear();
  unraised_.clear();
  storage::AlertStore alerts(*store_);
  const auto actions = KW_TRY(alerts.actions());

  // Every run of every key, in observedAt order (a key's own order kept on ties).
  std::vector<storage::StoredRun> runs;
  std::vector<core::KeyLabels> labels;
  const auto keys = KW_TRY(storage::RunStore(*store_).keys());
  labels.reserve(keys.size());
  for (const auto& summary : keys) {
    labels.push_back(detectors::key_labels(summary.key));
    key_ids_[labels.back().identity()] = summary.id;
    identities_[summary.id] = labels.back().identity();
    auto history = KW_TRY(storage::RunStore(*store_).key_history(summary.id));
    std::move(history.begin(), history.end(), std::back_inserter(runs));
  }
  std::map<std::int64_t, const core::KeyLabels*> label_of;
  for (std::size_t i = 0; i < keys.size(); ++i) label_of[keys[i].id] = &labels[i];
  std::stable_sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
    return a.record.run.observed_at < b.record.run.observed_at;
  });

  // Alerts whose firing run the daemon judged but whose cycle never closed (a crash between
  // the run and the close): decided now, stored now.
  std::set<std::string> unsettled;  // "<key identity>/<externalId>"
  // Each alert the replay fired, as its last event left it.
  std::map<std::string, detectors::AlertEvent> replayed;
  const auto collect = [&](std::vector<detectors::AlertEvent> events) {
    for (auto& event : events) {
      if (event.fired) {
        replayed[event.alert.id] = std::move(event);
      } else if (const auto it = replayed.find(event.alert.id); it != replayed.end()) {
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
  for (const auto& run : runs) {
    const core::Timestamp at = run.record.run.observed_at;
    // Operator actions replay at their place in time, between the runs around them.
    while (next_action < actions.size() && actions[next_action].at <= at) {
      replay_action(actions[next_action++]);
    }
    if (previous && at - *previous > options_.parameters.controls.cycle_gap) {
      collect(watch_.close_cycle());
    }
    previous = at;
    const core::KeyLabels& key = *label_of.at(run.key_id);
    const auto observation =
        detectors::observation_from_record(run.record, run.implementation_version);
    if (run.judged == storage::Judged::CycleOpen) {
      unsettled.insert(key.identity() + "/" + observation.external_id);
    }
    collect(watch_.observe(key, observation, confirm_for(options_, run.record)).events);
  }
  collect(watch_.close_cycle());
  while (next_action < actions.size()) replay_action(actions[next_action++]);

  const auto lost_by_a_crash = [&](const core::Alert& alert) {
    const auto judged_open = [&](const core::Alert& a) {
      return unsettled.contains(a.key.identity() + "/" + a.fired.external_id);
    };
    return judged_open(alert) ||
           std::any_of(alert.members.begin(), alert.members.end(), judged_open);
  };
  std::vector<detectors::AlertEvent> recovered;
  for (auto& [id, event] : replayed) {
    if (KW_TRY(alerts.find(id))) continue;
    if (lost_by_a_crash(event.alert)) {
      recovered.push_back(std::move(event));
    } else {
      unraised_.insert(id);  // history's, not this daemon's
    }
  }
  if (recovered.empty() && unsettled.empty()) return {};
  auto tx = KW_TRY(store_->begin());
  KW_TRY(store_events(tx, recovered, core::Timestamp::clock::now()));
  KW_TRY(storage::RunStore(*store_).close_judged_cycles(tx));
  return tx.commit();
}

}  // namespace kernelwatch::daemon
