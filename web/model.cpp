#include "web/model.hpp"

#include <algorithm>
#include <deque>
#include <map>

#include "core/digest.hpp"
#include "detectors/attribution.hpp"
#include "detectors/observation.hpp"

namespace kernelwatch::web {
namespace {

using core::ErrorCode;

// A stored run as detector input (as daemon/history.cpp converts them for the engine and the
// backtest; the daemon is above this module, so the few lines live here too).
detectors::Observation observation_of(const storage::RunSummary& run) {
  detectors::Observation o;
  o.external_id = run.external_id;
  o.observed_at = run.observed_at;
  o.status = run.status;
  o.median = run.median.value_or(std::chrono::nanoseconds{0});
  o.p20 = run.p20;
  o.p80 = run.p80;
  o.implementation_version = run.implementation_version;
  o.implementation_digest = run.implementation_digest;
  o.software = detectors::software_fields(run.software);
  o.status_reason = run.status_reason;
  return o;
}

detectors::ConfirmPolicy confirm_of(const ReplayOptions& options, std::string_view source) {
  return options.confirm_for ? options.confirm_for(source) : options.parameters.confirm;
}

bool is_hex64(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Alerts by id as their last event left them, in firing order.
struct AlertLog {
  std::vector<core::Alert> alerts;
  std::map<std::string, std::size_t> index;

  void apply(std::vector<detectors::AlertEvent> events) {
    for (auto& event : events) {
      const auto [it, fresh] = index.try_emplace(event.alert.id, alerts.size());
      if (fresh) {
        alerts.push_back(std::move(event.alert));
      } else {
        alerts[it->second] = std::move(event.alert);
      }
    }
  }
};

detectors::OperatorAction operator_action(storage::AlertAction action) {
  return action == storage::AlertAction::Rebaseline ? detectors::OperatorAction::Rebaseline
                                                    : detectors::OperatorAction::Acknowledge;
}

}  // namespace

std::string alert_page_id(const core::Alert& alert) {
  return alert.id;
}

std::string key_ref(const core::KeyLabels& key) {
  constexpr std::string_view kPrefix = "sha256:";
  return key.digest.rfind(kPrefix, 0) == 0 ? key.digest.substr(kPrefix.size()) : key.digest;
}

core::Result<KeyReplay> replay_key_id(storage::Connection& store, std::int64_t key_id,
                                      const ReplayOptions& options) {
  const storage::RunStore runs(store);
  const auto newest = KW_TRY(runs.newest_runs(key_id, 1));
  if (newest.empty()) {
    return core::fail(ErrorCode::NotFound, "no key " + std::to_string(key_id));
  }
  KeyReplay out;
  out.key_id = key_id;
  out.key = detectors::key_labels(newest.front().key);
  const auto summaries = KW_TRY(runs.key_summaries(key_id));

  std::vector<storage::AlertActionRow> actions;
  for (auto& action : KW_TRY(storage::AlertStore(store).actions())) {
    if (action.key_id == key_id) actions.push_back(std::move(action));
  }

  detectors::Watch watch(options.parameters);
  AlertLog log;
  const std::string identity = out.key.identity();
  std::size_t next_action = 0;
  bool rebaselined = false;
  std::optional<core::Timestamp> previous;
  const detectors::Observation* before = nullptr;
  std::vector<detectors::Observation> observations;
  observations.reserve(summaries.size());
  out.runs.reserve(summaries.size());
  for (const auto& summary : summaries) {
    while (next_action < actions.size() && actions[next_action].at <= summary.observed_at) {
      const auto& action = actions[next_action++];
      log.apply(watch.close_cycle());
      log.apply(watch.act(identity, action.alert_id, operator_action(action.action), action.at));
      rebaselined = rebaselined || action.action == storage::AlertAction::Rebaseline;
    }
    if (previous && summary.observed_at - *previous > options.parameters.controls.cycle_gap) {
      log.apply(watch.close_cycle());
    }
    previous = summary.observed_at;
    observations.push_back(observation_of(summary));
    const auto& observation = observations.back();
    auto step = watch.observe(out.key, observation, confirm_of(options, summary.source));
    ReplayedRun run;
    run.run = summary;
    run.verdict = std::move(step.detection.verdict);
    run.role = step.detection.role;
    if (before != nullptr) run.changes = detectors::attribute(*before, observation);
    run.rebaseline = std::exchange(rebaselined, false);
    before = &observation;
    out.runs.push_back(std::move(run));
    log.apply(std::move(step.events));
  }
  log.apply(watch.close_cycle());
  out.alerts = std::move(log.alerts);
  // A confirmed step or drift starts a new segment at its onset.
  std::map<std::string, std::size_t> by_external_id;
  for (std::size_t i = 0; i < out.runs.size(); ++i) by_external_id[out.runs[i].run.external_id] = i;
  for (const auto& alert : out.alerts) {
    if (alert.kind != core::AlertKind::Step && alert.kind != core::AlertKind::Drift) continue;
    if (const auto it = by_external_id.find(alert.onset.external_id); it != by_external_id.end())
      out.runs[it->second].segment_start = true;
  }
  return out;
}

core::Result<std::optional<KeyReplay>> replay_key(storage::Connection& store, std::string_view ref,
                                                  const ReplayOptions& options) {
  if (!is_hex64(ref)) return std::optional<KeyReplay>();
  const auto id = KW_TRY(storage::RunStore(store).find_key("sha256:" + std::string(ref)));
  if (!id) return std::optional<KeyReplay>();
  return std::optional<KeyReplay>(KW_TRY(replay_key_id(store, *id, options)));
}

std::string_view to_string(KeyState state) noexcept {
  switch (state) {
    case KeyState::Firing:
      return "firing";
    case KeyState::Acknowledged:
      return "acknowledged";
    case KeyState::Failing:
      return "failing";
    case KeyState::Breached:
      return "breached";
    case KeyState::InsufficientData:
      return "insufficient_data";
    case KeyState::InBand:
      return "in_band";
  }
  return "in_band";
}

std::optional<KeyState> parse_key_state(std::string_view text) {
  for (const auto state : {KeyState::Firing, KeyState::Acknowledged, KeyState::Failing,
                           KeyState::Breached, KeyState::InsufficientData, KeyState::InBand}) {
    if (text == to_string(state)) return state;
  }
  return std::nullopt;
}

KeyState key_state(const detectors::Verdict& verdict, const std::optional<core::Alert>& open_alert,
                   const std::optional<core::Alert>& open_failed_alert) {
  if (open_failed_alert) return KeyState::Failing;
  if (open_alert) {
    return open_alert->state == core::AlertState::Acknowledged ? KeyState::Acknowledged
                                                               : KeyState::Firing;
  }
  if (verdict.breach()) return KeyState::Breached;
  if (verdict.kind == detectors::VerdictKind::InBand) return KeyState::InBand;
  return KeyState::InsufficientData;
}

core::Status add_sparklines(const storage::RunStore& runs, std::vector<KeyRow>& rows,
                            std::size_t points) {
  const auto recent = KW_TRY(runs.recent_medians(points));
  for (auto& row : rows) {
    const auto it = recent.find(row.key_id);
    if (it == recent.end()) continue;
    row.run_count = it->second.runs;
    row.spark = it->second.medians_ns;
  }
  return {};
}

core::Result<std::vector<KeyRow>> key_rows_from_replay(storage::Connection& store,
                                                       const ReplayOptions& options) {
  const storage::RunStore runs(store);
  std::map<std::int64_t, core::KeyLabels> labels;
  std::map<std::int64_t, std::int64_t> counts;
  std::map<std::string, std::int64_t> ids;
  for (const auto& key : KW_TRY(runs.keys())) {
    labels[key.id] = detectors::key_labels(key.key);
    counts[key.id] = key.run_count;
    ids[labels[key.id].identity()] = key.id;
  }
  constexpr std::size_t kPoints = 24;
  std::map<std::int64_t, std::deque<std::int64_t>> spark;
  detectors::Watch watch(options.parameters);
  std::optional<core::Timestamp> previous;
  KW_TRY(runs.for_each_in_time_order([&](const storage::RunSummary& run) -> core::Status {
    if (previous && run.observed_at - *previous > options.parameters.controls.cycle_gap) {
      (void)watch.close_cycle();
    }
    previous = run.observed_at;
    (void)watch.observe(labels.at(run.key_id), observation_of(run),
                        confirm_of(options, run.source));
    if (run.status == core::RunStatus::Passed && run.median && run.median->count() > 0) {
      auto& points = spark[run.key_id];
      points.push_back(run.median->count());
      if (points.size() > kPoints) points.pop_front();
    }
    return {};
  }));
  (void)watch.close_cycle();
  const storage::AlertStore stored(store);
  std::vector<KeyRow> rows;
  for (const auto* view : watch.keys()) {
    const auto& key = view->monitor->key();
    KeyRow row;
    row.key_id = ids.at(key.identity());
    row.key = key;
    row.last_run = view->last_run;
    row.verdict = view->last_verdict;
    auto open = view->monitor->open_alert();
    const auto& failed = view->monitor->open_failed_alert();
    const auto& shown = failed ? failed : open;
    if (shown) {
      // The store knows what operators did since: its state wins.
      if (const auto found = KW_TRY(stored.find(shown->id)); found && !failed) {
        if (found->alert.state == core::AlertState::Resolved ||
            found->alert.state == core::AlertState::Rebaselined) {
          open.reset();
        } else {
          open->state = found->alert.state;
        }
      }
      if (failed || open) {
        row.alert_id = alert_page_id(*shown);
        row.alert_direction = shown->direction;
      }
    }
    row.state = key_state(row.verdict, open, failed);
    row.run_count = counts[row.key_id];
    const auto& points = spark[row.key_id];
    row.spark.assign(points.begin(), points.end());
    rows.push_back(std::move(row));
  }
  return rows;
}

core::Result<std::optional<AlertView>> find_alert(storage::Connection& store, std::string_view id,
                                                  const ReplayOptions& options) {
  AlertView view;
  std::optional<std::int64_t> key_id;
  // The API's id (the short one) or the long one the pages link with.
  const storage::AlertStore alerts(store);
  auto stored = core::is_short_alert_id(id) ? KW_TRY(alerts.find_by_short_id(id))
                                            : KW_TRY(alerts.find(id));
  if (auto row = std::move(stored)) {
    view.alert = row->alert;
    key_id = row->key_id;
    view.row = std::move(*row);
    view.notifications = KW_TRY(storage::Outbox(store).for_alert(view.alert.id, 200));
  } else {
    // Not stored: an alert of imported history, addressed as "<key digest>@<onset>...".
    const auto at = id.find('@');
    if (at == std::string_view::npos) return std::optional<AlertView>();
    key_id = KW_TRY(storage::RunStore(store).find_key(id.substr(0, at)));
    if (!key_id) return std::optional<AlertView>();
  }
  if (key_id) {
    view.replay = KW_TRY(replay_key_id(store, *key_id, options));
    if (!view.row) {
      const auto& alerts = view.replay->alerts;
      const auto it = std::find_if(alerts.begin(), alerts.end(),
                                   [&](const core::Alert& a) { return alert_page_id(a) == id; });
      if (it == alerts.end()) return std::optional<AlertView>();
      view.alert = *it;
    }
  }
  return std::optional<AlertView>(std::move(view));
}

}  // namespace kernelwatch::web
