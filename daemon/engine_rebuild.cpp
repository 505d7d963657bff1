// Engine::rebuild(): the detectors' state is not stored; it is the one replay (replay/) of the
// stored runs, each judged as the daemon judged it, with the operator's actions at their place in
// time. Then what a crash kept from being stored is stored, and the alerts imported history
// implies are brought up to date.
#include <algorithm>

#include "daemon/engine.hpp"

namespace kernelwatch::daemon {

replay::Options replay_options(const EngineOptions& options) {
  replay::Options out;
  out.parameters = options.parameters;
  return out;
}

core::Status Engine::rebuild() {
  auto replayed = replay_and_recover();
  // A replay that failed part way left the Watch as it was or half replaced: the engine judges
  // nothing until one succeeds (in_line_with_store()).
  if (replayed) {
    out_of_line_.reset();
  } else if (!out_of_line_) {
    out_of_line_ = replayed.error().message;
  }
  return replayed;
}

core::Status Engine::replay_and_recover() {
  ++generation_;
  // Whatever the replay finds (or fails to), every key's cached pages are dropped after it.
  struct PublishAll {
    Engine& engine;
    ~PublishAll() { engine.publish_all(); }
  } publish_all{*this};
  storage::AlertStore alerts(*store_);
  replay::Options options = replay_options(options_);
  // A cycle the daemon never closed (a crash, a rebuild mid-cycle) is decided at the replay's
  // last close: with the fleet's runs read for its steps, as the daemon's close would have.
  options.before_last_close = [this](detectors::Watch& watch) -> core::Status {
    if (!options_.fleet_controls || !options_.fleet_location || !store_->is_postgresql()) {
      return {};
    }
    auto tx = KW_TRY(store_->begin());
    KW_TRY(read_fleet_controls(tx, watch));
    return tx.commit();
  };
  auto replayed = KW_TRY(replay::replay(*store_, options));
  watch_ = std::move(replayed.watch);
  key_ids_ = replayed.key_ids;
  placed_ = std::move(replayed.placed);
  identities_.clear();
  for (const auto& [identity, id] : key_ids_) identities_[id] = identity;
  same_name_.clear();
  for (const auto* view : watch_.keys()) index_name(view->monitor->key());
  cycle_ = 0;
  return recover(alerts, replayed);
}

// Alerts whose firing run the daemon judged but whose cycle never closed are decided now and
// stored now, to be notified. The other alerts the replay fired without a row are imported
// history's: stored with origin history (never notified), and brought up to date when history
// imported since the last start moved them on. The daemon's own rows stay as they are (the
// replay judged their runs as the daemon did).
core::Status Engine::recover(storage::AlertStore& alerts, const replay::Replay& replayed) {
  std::vector<detectors::AlertEvent> recovered;
  std::vector<storage::AlertRow> history;
  std::set<core::AlertId> fired;
  for (const auto& alert : replayed.alerts) {
    fired.insert(alert.id);
    const auto row = KW_TRY(alerts.find(alert.id));
    if (row && row->origin == storage::AlertOrigin::Daemon) continue;
    const core::Timestamp at = replayed.changed_at.at(alert.id);
    if (!row && replayed.unsettled.contains(alert.id)) {
      recovered.push_back(detectors::AlertEvent{alert, alert.state, at, "recovered", true});
      continue;
    }
    if (row && core::to_json(row->alert) == core::to_json(alert)) continue;
    storage::AlertRow updated;
    updated.alert = alert;
    updated.key_id = core::is_incident(alert) ? std::nullopt : key_id_of(alert.key);
    updated.updated_at = row ? row->updated_at : at;
    updated.origin = storage::AlertOrigin::History;
    history.push_back(std::move(updated));
  }
  std::vector<core::AlertId> stale;
  history_alerts_.clear();
  for (const auto& row : history) history_alerts_.insert(row.alert.id);
  for (const auto& row : KW_TRY(alerts.list(std::nullopt, 0))) {
    if (row.origin != storage::AlertOrigin::History) continue;
    if (fired.contains(row.alert.id)) {
      history_alerts_.insert(row.alert.id);
    } else {
      stale.push_back(row.alert.id);
    }
  }
  if (recovered.empty() && history.empty() && stale.empty() && replayed.unsettled_runs == 0) {
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
