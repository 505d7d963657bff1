#include "daemon/engine.hpp"

#include <algorithm>

#include "core/digest.hpp"
#include "core/key.hpp"
#include "detectors/backtest.hpp"
#include "storage/outbox.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

std::string state_name(detectors::AlertState state) {
  return std::string(detectors::to_string(state));
}

std::string attribution_text(const std::vector<detectors::AttributionChange>& changes) {
  std::string out;
  for (const auto& c : changes) {
    if (!out.empty()) out += "; ";
    out += c.field + " changed " + c.from + " -> " + c.to;
  }
  return out;
}

json alert_document(const detectors::Alert& alert) {
  json doc = detectors::to_json(alert);
  doc["id"] = alert.id;
  doc["state"] = state_name(alert.state);
  return doc;
}

// The failed-run alert of a key: one per key while its runs keep failing.
json failed_document(const std::string& id, const detectors::KeyLabels& key,
                     const core::Record& record, const std::string& state,
                     const std::string& reason) {
  return json{{"id", id},
              {"benchmark", key.benchmark},
              {"provider", key.provider},
              {"workload", key.workload},
              {"environment", key.environment},
              {"kind", "failed"},
              {"direction", "regression"},
              {"state", state},
              {"externalId", record.run.source_native.external_id},
              {"observedAt", core::format_timestamp(record.run.observed_at)},
              {"explanation", reason}};
}

std::string status_reason(const core::Record& record) {
  const auto spec = record.run.document.find("spec");
  if (spec == record.run.document.end() || !spec->is_object()) return {};
  return spec->value("statusReason", std::string());
}

void owe(storage::AlertRow& row, const notifiers::Alert& alert, core::Timestamp owed_at) {
  notifiers::Notification one;
  one.alerts.push_back(alert);
  if (!row.pending_notifications.is_array()) row.pending_notifications = json::array();
  json item = notifiers::to_json(one)["alerts"][0];
  // Part of the flush's idempotency key: a reminder identical to an earlier message must not
  // be taken for a repeat of it, while a retried flush of the same debts keeps its key.
  item["owedAt"] = core::format_timestamp(owed_at);
  row.pending_notifications.push_back(std::move(item));
}
// The notification form of a stored alert, with the run that changed it.
notifiers::Alert alert_from_row(const storage::AlertRow& row, notifiers::AlertState state,
                                const detectors::Observation& run) {
  notifiers::Alert a;
  a.id = row.id;
  const json& d = row.document;
  a.key = {d.value("benchmark", ""), d.value("provider", ""), d.value("workload", ""),
           d.value("environment", "")};
  a.state = state;
  a.kind = row.kind == "drift"         ? notifiers::AlertKind::Drift
           : row.kind == "environment" ? notifiers::AlertKind::Environment
           : row.kind == "failed"      ? notifiers::AlertKind::Failed
                                       : notifiers::AlertKind::Step;
  a.direction = row.direction == "improvement" ? notifiers::Direction::Improvement
                                               : notifiers::Direction::Regression;
  a.median = run.median;
  if (d.contains("band") && d["band"].is_object()) {
    a.band_lower = std::chrono::nanoseconds{d["band"].value("lower", std::int64_t{0})};
    a.band_upper = std::chrono::nanoseconds{d["band"].value("upper", std::int64_t{0})};
  }
  a.relative_change = d.value("relativeChange", 0.0);
  a.baseline_runs = d.value("baselineRuns", std::int64_t{0});
  a.external_id = run.external_id;
  a.observed_at = run.observed_at;
  return a;
}

}  // namespace

detectors::DetectorParameters parameters_for(const EngineOptions& options,
                                             const core::Record& record) {
  detectors::DetectorParameters p = options.parameters;
  const bool own_run = record.run.source_native.source == "kernelwatch";
  p.confirm = own_run && options.confirm_reruns > 0 ? detectors::ConfirmPolicy::Next
                                                    : detectors::ConfirmPolicy::None;
  return p;
}

notifiers::Alert to_notification_alert(const detectors::Alert& alert, notifiers::AlertState state) {
  notifiers::Alert out;
  out.id = alert.id;
  out.key = {alert.key.benchmark, alert.key.provider, alert.key.workload, alert.key.environment};
  out.state = state;
  out.kind = alert.kind;
  out.direction = alert.direction;
  out.median = alert.median;
  out.band_lower = alert.band.lower;
  out.band_upper = alert.band.upper;
  out.relative_change = alert.relative_change;
  out.baseline_runs = static_cast<std::int64_t>(alert.baseline_runs);
  out.attribution = attribution_text(alert.attribution);
  out.external_id = alert.external_id;
  out.observed_at = alert.observed_at;
  out.run_record = nullptr;
  return out;
}

Engine::Engine(storage::Connection& store, EngineOptions options)
    : store_(&store), options_(std::move(options)) {}

Engine::KeyState& Engine::state_for(std::int64_t key_id, const detectors::KeyLabels& key,
                                    const core::Record& record) {
  auto& state = keys_[key_id];
  if (!state.monitor) {
    state.key_id = key_id;
    state.monitor =
        std::make_unique<detectors::KeyMonitor>(key, parameters_for(options_, record));
  }
  return state;
}

// An operator action acts on the monitor only when it names the monitor's open alert (an
// action on a `failed` alert, or on an alert since superseded, leaves the detector alone).
void Engine::replay_action(KeyState& state, const storage::AlertActionRow& action) {
  const auto& open = state.monitor->alerts().open();
  if (!open || open->id != action.alert_id) return;
  (void)(action.action == storage::AlertAction::Acknowledge ? state.monitor->acknowledge(action.at)
                                                            : state.monitor->rebaseline(action.at));
}

core::Status Engine::rebuild() {
  ++generation_;
  keys_.clear();
  storage::AlertStore alerts(*store_);
  auto actions = alerts.actions();
  if (!actions) return tl::unexpected(actions.error());
  auto keys = storage::RunStore(*store_).keys();
  if (!keys) return tl::unexpected(keys.error());
  for (const auto& summary : *keys) {
    auto history = storage::RunStore(*store_).key_history(summary.id);
    if (!history) return tl::unexpected(history.error());
    if (history->empty()) continue;
    const detectors::KeyLabels labels = detectors::key_labels(summary.key);
    KeyState& state = state_for(summary.id, labels, history->front().record);
    std::vector<const storage::AlertActionRow*> key_actions;
    for (const auto& a : *actions) {
      if (a.key_id == summary.id) key_actions.push_back(&a);
    }
    std::size_t next_action = 0;
    for (const auto& run : *history) {
      const auto observation =
          detectors::observation_from_record(run.record, run.implementation_version);
      // Operator actions replay at their place in time, between the runs around them.
      while (next_action < key_actions.size() &&
             key_actions[next_action]->at <= observation.observed_at) {
        replay_action(state, *key_actions[next_action++]);
      }
      const auto step = state.monitor->observe(observation);
      state.last_run = observation;
      if (observation.judgeable()) state.last_verdict = step.detection.verdict;
      remember_verdict(state, observation, step.detection.verdict);
    }
    while (next_action < key_actions.size()) {
      replay_action(state, *key_actions[next_action++]);
    }
  }
  // Open failed alerts come from the table: they are the daemon's own, not the detectors'.
  for (auto& [id, state] : keys_) {
    const auto& open = state.monitor->alerts().open();
    if (!open) continue;
    auto row = alerts.find(open->id);
    if (!row) return tl::unexpected(row.error());
    if (!*row) state.unraised_alert = open->id;
  }
  // An acknowledged failed alert is still the key's open one (only a good run closes it).
  for (const char* open_state : {"firing", "acknowledged"}) {
    auto open_failed = alerts.list(open_state, 0);
    if (!open_failed) return tl::unexpected(open_failed.error());
    for (const auto& row : *open_failed) {
      if (row.kind == "failed") keys_[row.key_id].open_failed_alert = row.id;
    }
  }
  for (auto it = keys_.begin(); it != keys_.end();) {
    it = it->second.monitor ? std::next(it)
                            : keys_.erase(it);  // failed-only keys get a monitor on their next run
  }
  return {};
}

core::Status Engine::write_alert(storage::Transaction& tx, std::int64_t key_id,
                                 const detectors::Alert& alert, core::Timestamp now) {
  storage::AlertRow row;
  row.id = alert.id;
  row.key_id = key_id;
  row.kind = std::string(detectors::to_string(alert.kind));
  row.direction = std::string(detectors::to_string(alert.direction));
  row.state = state_name(alert.state);
  row.fired_at = alert.observed_at;
  row.updated_at = now;
  row.document = alert_document(alert);
  owe(row, to_notification_alert(alert, notifiers::AlertState::Firing), now);
  return storage::AlertStore(*store_).upsert(tx, row);
}

// Appends a notification the alert owes to its row (sent by flush_notifications()).

void Engine::remember_verdict(KeyState& state, const detectors::Observation& run,
                              const detectors::Verdict& verdict) {
  if (!run.judgeable()) return;
  state.verdicts.push_back({run.observed_at, verdict.kind});
  constexpr std::size_t kKept = 64;  // far more than one cycle needs
  if (state.verdicts.size() > kKept) state.verdicts.erase(state.verdicts.begin());
}

core::Status Engine::apply_controls(storage::Transaction& tx) {
  if (unsent_steps_.empty()) return {};
  std::vector<detectors::Alert> alerts;
  for (const auto& [key_id, alert] : unsent_steps_) alerts.push_back(alert);
  std::vector<detectors::KeyVerdicts> verdicts;
  for (const auto& [id, state] : keys_) verdicts.push_back({state.monitor->key(), state.verdicts});
  detectors::apply_controls(alerts, verdicts, options_.parameters.controls);
  storage::AlertStore store(*store_);
  for (std::size_t i = 0; i < alerts.size(); ++i) {
    if (alerts[i].kind != detectors::AlertKind::Environment) continue;
    auto row = store.find(alerts[i].id);
    if (!row) return tl::unexpected(row.error());
    if (!*row) continue;
    (*row)->kind = "environment";
    (*row)->document["kind"] = "environment";
    (*row)->document["incident"] = alerts[i].incident;
    if ((*row)->pending_notifications.is_array()) {
      for (auto& owed : (*row)->pending_notifications) {
        if (owed.value("id", "") == alerts[i].id) owed["kind"] = "environment";
      }
    }
    if (auto ok = store.upsert(tx, **row); !ok) return ok;
  }
  unsent_steps_.clear();
  return {};
}

core::Result<std::size_t> Engine::flush_notifications(core::Timestamp now) {
  {
    // Before anything is sent: a step that the reference provider or most keys of the
    // environment show too is an environment incident.
    auto tx = store_->begin();
    if (!tx) return tl::unexpected(tx.error());
    if (auto ok = apply_controls(*tx); !ok) return tl::unexpected(ok.error());
    if (auto ok = tx->commit(); !ok) return tl::unexpected(ok.error());
  }
  storage::AlertStore alerts(*store_);
  auto owed = alerts.with_pending_notifications();
  if (!owed) return tl::unexpected(owed.error());
  if (owed->empty()) return std::size_t{0};
  if (options_.destinations.empty()) {
    auto tx = store_->begin();
    if (!tx) return tl::unexpected(tx.error());
    if (auto ok = alerts.clear_pending_notifications(*tx, now); !ok)
      return tl::unexpected(ok.error());
    if (auto ok = tx->commit(); !ok) return tl::unexpected(ok.error());
    return std::size_t{0};
  }
  json items = json::array();
  for (const auto& row : *owed) {
    for (const auto& item : row.pending_notifications) items.push_back(item);
  }
  // Stable for the same owed set, so a retried flush cannot send two different keys.
  const std::string idempotency_key = options_.host + "/" + core::digest_of(items).substr(7, 32);
  const json doc = {{"idempotencyKey", idempotency_key},
                    {"createdAt", core::format_timestamp(now)},
                    {"host", options_.host},
                    {"alerts", std::move(items)}};
  auto notification = notifiers::notification_from_json(doc);
  if (!notification) return tl::unexpected(notification.error());
  const std::string payload = notifiers::serialize(*notification);
  auto tx = store_->begin();
  if (!tx) return tl::unexpected(tx.error());
  storage::Outbox outbox(*store_);
  std::size_t written = 0;
  for (const auto& destination : options_.destinations) {
    auto outcome = outbox.enqueue(*tx, {destination, idempotency_key, payload, now, std::nullopt});
    if (!outcome) return tl::unexpected(outcome.error());
    written += *outcome == storage::EnqueueOutcome::Inserted ? 1 : 0;
  }
  if (auto ok = alerts.clear_pending_notifications(*tx, now); !ok)
    return tl::unexpected(ok.error());
  if (auto ok = tx->commit(); !ok) return tl::unexpected(ok.error());
  return written;
}

core::Result<Processed> Engine::process(const core::Record& record, core::Timestamp now) {
  ++generation_;
  auto processed = process_run(record, now);
  // An error after the monitor saw the run rolled the database back: make the monitors match
  // what is stored again, or the run's alert would be remembered as fired and never written.
  if (!processed) (void)rebuild();
  return processed;
}

core::Result<Processed> Engine::process_run(const core::Record& record, core::Timestamp now) {
  auto key = core::key_of(record);
  if (!key) return tl::unexpected(key.error());
  Processed processed;
  processed.key_display = key->display();
  auto tx = store_->begin();
  if (!tx) return tl::unexpected(tx.error());
  auto inserted = storage::RunStore(*store_).insert_run(*tx, record, "");
  if (!inserted) return tl::unexpected(inserted.error());
  if (inserted->outcome == storage::InsertOutcome::Duplicate) {
    processed.duplicate = true;
    if (auto ok = tx->commit(); !ok) return tl::unexpected(ok.error());
    return processed;
  }
  const std::int64_t key_id = inserted->key_id;
  const detectors::KeyLabels labels = detectors::key_labels(*key);
  KeyState& state = state_for(key_id, labels, record);
  const auto observation =
      detectors::observation_from_record(record, core::implementation_version(record.run.metadata));
  if (state.last_run && observation.observed_at <= state.last_run->observed_at) {
    processed.verdict.explanation = "stored; older than the key's newest run, so not judged";
  } else {
    const auto step = state.monitor->observe(observation);
    state.last_run = observation;
    processed.verdict = step.detection.verdict;
    processed.role = step.detection.role;
    if (observation.judgeable()) state.last_verdict = step.detection.verdict;
    remember_verdict(state, observation, step.detection.verdict);
    // Pending with nothing fired: the detector waits for a confirming run (the daemon reruns).
    // Without confirmation a breach is Pending too, but it has already fired.
    processed.awaits_confirmation =
        step.detection.role == detectors::RunRole::Pending && !step.fired;
    if (step.fired) {
      if (auto ok = write_alert(*tx, key_id, *step.fired, now); !ok)
        return tl::unexpected(ok.error());
      processed.fired.push_back(step.fired->id);
      if (step.fired->kind == detectors::AlertKind::Step)
        unsent_steps_.emplace_back(key_id, *step.fired);
    }
    for (const auto& event : step.events) {
      if (step.fired && event.alert_id == step.fired->id) continue;
      auto row = storage::AlertStore(*store_).find(event.alert_id);
      if (!row) return tl::unexpected(row.error());
      if (!*row) continue;
      (*row)->state = state_name(event.to);
      (*row)->updated_at = now;
      (*row)->document["state"] = (*row)->state;
      if (event.notify == detectors::Notify::Resolved) {
        processed.resolved.push_back(event.alert_id);
        owe(**row, alert_from_row(**row, notifiers::AlertState::Resolved, observation), now);
      }
      if (auto ok = storage::AlertStore(*store_).upsert(*tx, **row); !ok)
        return tl::unexpected(ok.error());
    }
  }

  // Failed runs: one `failed` alert per key while they keep failing, resolved by a good run.
  if (record.run.status == core::RunStatus::Failed && !state.open_failed_alert) {
    const std::string id = key->digest() + "@failed@" + record.run.source_native.external_id;
    const std::string reason = status_reason(record);
    storage::AlertRow row{
        id,
        key_id,
        "failed",
        "regression",
        "firing",
        record.run.observed_at,
        now,
        failed_document(id, labels, record, "firing", reason.empty() ? "the run failed" : reason),
        nullptr,
        std::nullopt};
    notifiers::Alert a;
    a.id = id;
    a.key = {labels.benchmark, labels.provider, labels.workload, labels.environment};
    a.kind = notifiers::AlertKind::Failed;
    a.attribution = reason;
    a.external_id = record.run.source_native.external_id;
    a.observed_at = record.run.observed_at;
    owe(row, a, now);
    if (auto ok = storage::AlertStore(*store_).upsert(*tx, row); !ok)
      return tl::unexpected(ok.error());
    state.open_failed_alert = id;
    processed.fired.push_back(id);
  } else if (record.run.status == core::RunStatus::Passed && state.open_failed_alert) {
    auto row = storage::AlertStore(*store_).find(*state.open_failed_alert);
    if (!row) return tl::unexpected(row.error());
    if (*row) {
      (*row)->state = "resolved";
      (*row)->updated_at = now;
      (*row)->document["state"] = "resolved";
      notifiers::Alert a;
      a.id = (*row)->id;
      a.key = {labels.benchmark, labels.provider, labels.workload, labels.environment};
      a.kind = notifiers::AlertKind::Failed;
      a.state = notifiers::AlertState::Resolved;
      a.external_id = record.run.source_native.external_id;
      a.observed_at = record.run.observed_at;
      owe(**row, a, now);
      if (auto ok = storage::AlertStore(*store_).upsert(*tx, **row); !ok)
        return tl::unexpected(ok.error());
      processed.resolved.push_back((*row)->id);
    }
    state.open_failed_alert.reset();
  }

  processed.notifications = processed.fired.size() + processed.resolved.size();
  if (auto ok = tx->commit(); !ok) return tl::unexpected(ok.error());
  return processed;
}

// Reminders read and write only alert rows (the monitors are not involved), so a failed
// transaction leaves nothing to rebuild.
core::Result<std::size_t> Engine::tick(core::Timestamp now) {
  const auto& policy = options_.policy;
  if (policy.repeat_interval.count() <= 0) return std::size_t{0};
  storage::AlertStore alerts(*store_);
  auto due = alerts.firing_notified_before(now - policy.repeat_interval);
  if (!due) return tl::unexpected(due.error());
  std::size_t owed = 0;
  std::optional<storage::Transaction> tx;
  for (auto& row : *due) {
    // A notification already owed (not yet queued) carries the alert anyway.
    if (!row.pending_notifications.is_null()) continue;
    const auto state = keys_.find(row.key_id);
    if (state == keys_.end() || !state->second.last_run) continue;
    if (!tx) {
      auto begun = store_->begin();
      if (!begun) return tl::unexpected(begun.error());
      tx.emplace(std::move(*begun));
    }
    // A reminder carries the alert as it fired, with the key's newest run.
    owe(row, alert_from_row(row, notifiers::AlertState::Firing, *state->second.last_run), now);
    if (auto ok = alerts.upsert(*tx, row); !ok) return tl::unexpected(ok.error());
    ++owed;
  }
  if (tx) {
    if (auto ok = tx->commit(); !ok) return tl::unexpected(ok.error());
  }
  return owed;
}

core::Result<std::optional<core::Timestamp>> Engine::next_reminder() const {
  auto oldest = storage::AlertStore(*store_).oldest_firing_notification();
  if (!oldest) return tl::unexpected(oldest.error());
  return detectors::reminder_due(detectors::AlertState::Firing, *oldest, options_.policy);
}

core::Status Engine::acknowledge(std::string_view alert_id, bool rebaseline, core::Timestamp now) {
  ++generation_;
  auto ok = acknowledge_alert(alert_id, rebaseline, now);
  if (!ok && ok.error().code != core::ErrorCode::NotFound &&
      ok.error().code != core::ErrorCode::Conflict) {
    (void)rebuild();
  }
  return ok;
}

core::Status Engine::acknowledge_alert(std::string_view alert_id, bool rebaseline,
                                       core::Timestamp now) {
  storage::AlertStore alerts(*store_);
  auto row = alerts.find(alert_id);
  if (!row) return tl::unexpected(row.error());
  if (!*row)
    return core::fail(core::ErrorCode::NotFound, "no alert with id " + std::string(alert_id));
  if ((*row)->state == "resolved" || (*row)->state == "rebaselined") {
    return core::fail(core::ErrorCode::Conflict,
                      "alert " + std::string(alert_id) + " is already " + (*row)->state);
  }
  auto tx = store_->begin();
  if (!tx) return tl::unexpected(tx.error());
  const auto action =
      rebaseline ? storage::AlertAction::Rebaseline : storage::AlertAction::Acknowledge;
  if (auto ok = alerts.record_action(*tx, {std::string(alert_id), (*row)->key_id, action, now});
      !ok)
    return ok;
  auto it = keys_.find((*row)->key_id);
  if ((*row)->kind == "failed") {
    (*row)->state = rebaseline ? "rebaselined" : "acknowledged";
    if (rebaseline && it != keys_.end()) it->second.open_failed_alert.reset();
  } else if (it != keys_.end() && it->second.monitor && it->second.monitor->alerts().open() &&
             it->second.monitor->alerts().open()->id == alert_id) {
    const auto events =
        rebaseline ? it->second.monitor->rebaseline(now) : it->second.monitor->acknowledge(now);
    for (const auto& event : events) {
      if (event.alert_id == alert_id) (*row)->state = state_name(event.to);
    }
  } else {
    // The row says open but the detector has moved on (superseded): close it as asked.
    (*row)->state = rebaseline ? "rebaselined" : "acknowledged";
  }
  (*row)->updated_at = now;
  (*row)->document["state"] = (*row)->state;
  if (auto ok = alerts.upsert(*tx, **row); !ok) return ok;
  return tx->commit();
}

std::vector<KeyStatus> Engine::status() const {
  std::vector<KeyStatus> out;
  for (const auto& [id, state] : keys_) {
    KeyStatus s;
    s.key_id = id;
    s.key = state.monitor->key();
    s.last_run = state.last_run;
    s.last_verdict = state.last_verdict;
    s.open_alert = state.monitor->alerts().open();
    if (s.open_alert && s.open_alert->id == state.unraised_alert) s.open_alert.reset();
    s.open_failed_alert = state.open_failed_alert;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kernelwatch::daemon
