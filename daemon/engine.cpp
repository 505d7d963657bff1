#include "daemon/engine.hpp"

#include <algorithm>
#include <utility>

#include "core/key.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::daemon {

detectors::ConfirmPolicy confirm_for(const EngineOptions& options, std::string_view source) {
  // The daemon's own runs are confirmed by the next run of their key when their source says it
  // produces that run (a rerun at once or its next scheduled run): runners/sources.hpp.
  const runners::RunSource* origin = runners::find_run_source(source);
  const bool own_run = origin != nullptr && origin->confirmed_by_next_run;
  return own_run && options.confirm_reruns > 0 ? detectors::ConfirmPolicy::Next
                                               : detectors::ConfirmPolicy::None;
}

Engine::Engine(storage::Connection& store, EngineOptions options)
    : store_(&store), options_(std::move(options)), watch_(options_.parameters) {}

std::optional<std::int64_t> Engine::key_id_of(const core::KeyLabels& key) const {
  const auto it = key_ids_.find(key.identity());
  if (it == key_ids_.end()) return std::nullopt;
  return it->second;
}

// Each event is the alert as it now is: its row is written whole, keeping what was notified. An
// incident member has no row of its own: its incident's row, rewritten by the incident's event
// that follows each change of a member, holds it.
core::Status Engine::store_events(Transaction& tx, const std::vector<detectors::AlertEvent>& events,
                                  core::Timestamp now) {
  storage::AlertStore alerts(*store_);
  for (const auto& event : events) {
    if (core::is_incident_member(event.alert)) continue;
    auto existing = KW_TRY(alerts.find(event.alert.id));
    storage::AlertRow row;
    if (existing) row = std::move(*existing);
    row.alert = event.alert;
    // An incident's key is its environment: no key row.
    row.key_id = core::is_incident(event.alert) ? std::nullopt : key_id_of(event.alert.key);
    row.updated_at = now;
    if (row.key_id) touched_.insert(*row.key_id);
    for (const auto& member : event.alert.members) {
      if (const auto id = key_id_of(member.key)) touched_.insert(*id);
    }
    KW_TRY(alerts.upsert(tx, row));
  }
  return {};
}

core::Result<Processed> Engine::process(const core::Run& run, core::Timestamp now) {
  auto processed = process_batch(std::span<const core::Run>(&run, 1), now);
  if (!processed) return tl::unexpected(processed.error());
  return std::move(processed->front());
}

core::Result<std::vector<Processed>> Engine::process_batch(std::span<const core::Run> runs,
                                                           core::Timestamp now) {
  ++generation_;
  KW_TRY(in_line_with_store());
  warm_.clear();
  warm_notes_.clear();
  if (auto warmed = warm_start(runs); !warmed) {
    publish_changes();
    return tl::unexpected(after_rollback(std::move(warmed.error())));
  }
  const auto store_all = [&]() -> core::Result<std::vector<Processed>> {
    auto tx = KW_TRY(store_->begin());
    std::vector<Processed> out;
    out.reserve(runs.size());
    for (const auto& run : runs) out.push_back(KW_TRY(process_run(tx, run, now)));
    KW_TRY(tx.commit());
    if (!out.empty()) out.front().warm_notes = std::move(warm_notes_);
    return out;
  };
  auto processed = store_all();
  // An error after the detectors saw a run rolled the whole batch back: make them match what
  // is stored again, or a run's alert would be remembered as fired and never written.
  if (!processed) processed = tl::unexpected(after_rollback(std::move(processed.error())));
  publish_changes();
  return processed;
}

core::Result<Processed> Engine::process_run(Transaction& tx, const core::Run& run,
                                            core::Timestamp now) {
  const core::Record& record = run.record();
  const core::ComparabilityKey& key = run.key();
  Processed processed;
  processed.key_display = key.display();
  processed.key_digest = run.key_digest();
  storage::RunStore runs(*store_);
  const auto inserted = KW_TRY(runs.insert_run(tx, run, ""));
  if (inserted.outcome == storage::InsertOutcome::Duplicate) {
    processed.duplicate = true;
    return processed;
  }
  touched_.insert(inserted.key_id);
  placed_.count(core::placement_of(record.run.metadata), record.run.observed_at);
  const core::KeyLabels labels = detectors::key_labels(run);
  if (const auto warm = warm_.find(labels.identity()); warm != warm_.end()) {
    processed.warm_start = std::move(warm->second);
    warm_.erase(warm);
    // Started warm just before: the key is new to this host all the same.
    processed.replaced_key = replaced_by(labels);
  } else if (!key_ids_.contains(labels.identity())) {
    processed.replaced_key = replaced_by(labels);
  }
  key_ids_[labels.identity()] = inserted.key_id;
  identities_[inserted.key_id] = labels.identity();
  index_name(labels);

  auto observation =
      detectors::observation_from_record(record, core::implementation_version(record.run.metadata));
  const auto confirm = confirm_for(options_, record.run.source_native.source);
  storage::Judgement judgement{confirm == detectors::ConfirmPolicy::Next
                                   ? storage::Confirmation::Next
                                   : storage::Confirmation::Alone,
                               observation.observed_at, cycle_id(now)};
  // A run dated a little before its key's newest (that one came minutes ahead, within the
  // clock tolerance) is judged just after it; an older one is stored, not judged. Either way
  // the run records it, so a replay judges it the same way.
  const auto* view = watch_.find(labels.identity());
  if (view != nullptr && view->last_run && observation.observed_at <= view->last_run->observed_at) {
    if (view->last_run->observed_at - observation.observed_at > core::kFutureTolerance) {
      judgement.confirmation = storage::Confirmation::NotJudged;
      KW_TRY(runs.record_judgement(tx, inserted.key_id, record.run.observed_at, judgement));
      processed.verdict.explanation = "stored; older than the key's newest run by more than " +
                                      std::to_string(core::kFutureTolerance.count()) +
                                      " minutes, so not judged";
      return processed;
    }
    judgement.order = view->last_run->observed_at + std::chrono::nanoseconds(1);
    observation.observed_at = judgement.order;
  }
  KW_TRY(runs.record_judgement(tx, inserted.key_id, record.run.observed_at, judgement));
  const auto step = watch_.observe(labels, observation, confirm);
  processed.verdict = step.detection.verdict;
  processed.role = step.detection.role;
  // Pending: the detector waits for a confirming run (the daemon reruns the case).
  processed.awaits_confirmation =
      step.detection.role == detectors::RunRole::Pending && !step.detection.trigger;
  for (const auto& event : step.events) {
    if (event.fired) processed.fired.push_back(event.alert.id);
    if (event.alert.state == core::AlertState::Resolved)
      processed.resolved.push_back(event.alert.id);
  }
  KW_TRY(store_events(tx, step.events, now));
  return processed;
}

std::vector<detectors::CandidateCase> Engine::judge(std::span<const core::Run> runs) const {
  auto cases = detectors::candidate_cases(runs);
  for (auto& c : cases) detectors::judge_case(watch_, options_.parameters, c);
  return cases;
}

std::int64_t Engine::cycle_id(core::Timestamp now) {
  if (cycle_ == 0) {
    cycle_ = std::max<std::int64_t>(now.time_since_epoch().count(), last_cycle_ + 1);
    last_cycle_ = cycle_;
  }
  return cycle_;
}

core::Result<CycleClose> Engine::close(Transaction& tx, core::Timestamp now) {
  CycleClose out;
  KW_TRY(read_fleet_controls(tx, watch_));
  const auto events = watch_.close_cycle();
  cycle_ = 0;
  for (const auto& event : events) {
    if (!event.fired || core::is_incident_member(event.alert)) continue;
    (core::is_incident(event.alert) ? out.incidents : out.fired).push_back(event.alert);
  }
  KW_TRY(store_events(tx, events, now));
  KW_TRY(storage::RunStore(*store_).close_judged_cycles(tx));
  return out;
}

core::Result<CycleClose> Engine::close_cycle(core::Timestamp now) {
  ++generation_;
  KW_TRY(in_line_with_store());
  // The transaction lives in the lambda: rolled back before a failure's rebuild, which reads
  // the store and may write (Engine::recover).
  const auto close_and_commit = [&]() -> core::Result<CycleClose> {
    auto tx = KW_TRY(store_->begin());
    CycleClose closed = KW_TRY(close(tx, now));
    KW_TRY(tx.commit());
    return closed;
  };
  auto closed = close_and_commit();
  // Rolled back: the Watch already decided the held steps; replay to match the store again.
  if (!closed) closed = tl::unexpected(after_rollback(std::move(closed.error())));
  publish_changes();
  return closed;
}

core::Status Engine::acknowledge(const core::AlertId& alert_id, core::OperatorAction action,
                                 core::Timestamp now) {
  ++generation_;
  KW_TRY(in_line_with_store());
  auto ok = act(alert_id, action, now);
  if (!ok && ok.error().code != core::ErrorCode::NotFound &&
      ok.error().code != core::ErrorCode::Conflict) {
    ok = tl::unexpected(after_rollback(std::move(ok.error())));
  }
  publish_changes();
  return ok;
}

core::Error Engine::after_rollback(core::Error cause) {
  auto replayed = rebuild();
  if (!replayed) {
    cause.message +=
        "; replaying the history to put the detectors back in line with the store "
        "failed too (" +
        replayed.error().message +
        "), so nothing is judged until a replay succeeds (tried again at the next "
        "run, close or action)";
  }
  return cause;
}

core::Status Engine::in_line_with_store() {
  if (!out_of_line_) return {};
  auto replayed = rebuild();
  if (replayed) return {};
  core::Error error = replayed.error();
  error.code = core::ErrorCode::Unavailable;
  error.message =
      "the detectors are not in line with the store since a replay of the history "
      "failed (" +
      *out_of_line_ + "), and replaying it again failed: " + error.message;
  return tl::unexpected(std::move(error));
}

void Engine::publish_changes() {
  const auto touched = std::exchange(touched_, {});
  if (!listener_) return;
  for (const auto key_id : touched) listener_(key_id);
}

void Engine::publish_all() {
  touched_.clear();
  if (listener_) listener_(std::nullopt);
}

core::Status Engine::act(const core::AlertId& alert_id, core::OperatorAction action,
                         core::Timestamp now) {
  storage::AlertStore alerts(*store_);
  const auto row = KW_TRY(alerts.find(alert_id));
  if (!row) {
    return core::fail(core::ErrorCode::NotFound, "no alert with id " + alert_id.long_form());
  }
  if (!core::is_open(row->alert.state)) {
    return core::fail(core::ErrorCode::Conflict,
                      "alert " + alert_id.long_form() + " is already " +
                          std::string(core::to_string(row->alert.state)));
  }
  auto tx = KW_TRY(store_->begin());
  KW_TRY(alerts.record_action(tx, {alert_id, row->key_id.value_or(0), action, now}));
  std::vector<detectors::AlertEvent> events;
  if (row->key_id) {
    if (const auto identity = identities_.find(*row->key_id); identity != identities_.end()) {
      events = watch_.act(identity->second, alert_id, action, now);
    }
  } else if (core::is_incident(row->alert)) {
    // The incident's members, each acted on as its key's alert: recorded on each key too, so a
    // replay of one key alone (its chart) knows it.
    events = watch_.act_on_incident(alert_id, action, now);
    for (const auto& event : events) {
      if (!core::is_incident_member(event.alert)) continue;
      if (const auto key_id = key_id_of(event.alert.key)) {
        KW_TRY(alerts.record_action(tx, {event.alert.id, *key_id, action, now}));
      }
    }
  } else {
    // A GPU or host out of line (no key): the Watch keeps it open while acknowledged, or
    // remembers a rebaselined one until the unit is back in line; a replay acts on it the same.
    events = watch_.act_on_unit(alert_id, action, now);
  }
  // The row says open but the detectors have moved on (superseded): close it as asked.
  if (events.empty()) events.push_back(detectors::operator_close(row->alert, action, now));
  KW_TRY(store_events(tx, events, now));
  return tx.commit();
}

namespace {}  // namespace

std::string Engine::name_of(const core::KeyLabels& key) {
  return key.display() + " " + key.protocol;
}

void Engine::index_name(const core::KeyLabels& key) {
  same_name_[name_of(key)].insert(key.identity());
}

std::optional<core::KeyLabels> Engine::replaced_by(const core::KeyLabels& fresh) const {
  const auto named = same_name_.find(name_of(fresh));
  if (named == same_name_.end()) return std::nullopt;
  std::optional<core::KeyLabels> newest;
  core::Timestamp newest_at = core::Timestamp::min();
  for (const std::string& identity : named->second) {  // in identity order, as watch_.keys()
    const auto* view = watch_.find(identity);
    if (view == nullptr || identity == fresh.identity()) continue;
    const auto& key = view->monitor->key();
    const auto at = view->last_run ? view->last_run->observed_at : core::Timestamp::min();
    if (!newest || at > newest_at) {
      newest = key;
      newest_at = at;
    }
  }
  return newest;
}

std::vector<ProtocolChange> Engine::protocol_changes() const {
  std::map<std::string, std::vector<const detectors::Watch::KeyView*>> by_name;
  for (const auto& [name, identities] : same_name_) {
    if (identities.size() < 2) continue;
    for (const std::string& identity : identities) {
      if (const auto* view = watch_.find(identity)) by_name[name].push_back(view);
    }
  }
  std::vector<ProtocolChange> out;
  for (auto& [name, views] : by_name) {
    if (views.size() < 2) continue;
    const auto last = [](const detectors::Watch::KeyView* v) {
      return v->last_run ? v->last_run->observed_at : core::Timestamp::min();
    };
    std::sort(views.begin(), views.end(),
              [&](const auto* a, const auto* b) { return last(a) > last(b); });
    ProtocolChange change;
    change.current = views.front()->monitor->key();
    for (std::size_t i = 1; i < views.size(); ++i) {
      change.previous.push_back(views[i]->monitor->key());
      change.previous_last_run.push_back(last(views[i]));
    }
    out.push_back(std::move(change));
  }
  return out;
}

void Engine::for_each_key(const std::function<void(const KeyView&)>& visit) const {
  for (const auto& [identity, key_id] : key_ids_) {
    const auto* view = watch_.find(identity);
    if (view == nullptr) continue;
    visit(KeyView{key_id, &view->monitor->key(), &view->last_run, &view->last_verdict,
                  &view->monitor->open_alert(), &view->monitor->open_failed_alert()});
  }
}

std::vector<KeyStatus> Engine::status() const {
  std::vector<KeyStatus> out;
  for (const auto& [identity, key_id] : key_ids_) {
    const auto* view = watch_.find(identity);
    if (view == nullptr) continue;
    KeyStatus s;
    s.key_id = key_id;
    s.key = view->monitor->key();
    s.last_run = view->last_run;
    s.last_verdict = view->last_verdict;
    s.open_alert = view->monitor->open_alert();
    s.open_failed_alert = view->monitor->open_failed_alert();
    s.open_alert_from_history =
        s.open_alert &&
        history_alerts_.contains(s.open_alert->incident.empty() ? s.open_alert->id
                                                                : s.open_alert->incident);
    s.standing = detectors::standing_of(
        s.last_run ? std::optional<core::RunStatus>(s.last_run->status) : std::nullopt,
        s.last_verdict, s.open_alert, s.open_failed_alert);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kernelwatch::daemon
