#include "replay/replay.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "detectors/attribution.hpp"

namespace kernelwatch::replay {
namespace {

// Feeds the runs, in the daemon's order, and the operator's actions through the replay's Watch.
class Driver {
 public:
  Driver(Replay& out, const Options& options, std::vector<storage::AlertActionRow> actions)
      : out_(out), options_(options), actions_(std::move(actions)) {}

  void feed(const storage::RunSummary& run) {
    ++out_.runs;
    if (run.judgement && run.judgement->is_control()) {
      // Another host's run read around a step of this host (storage.fleet_controls), stored with
      // the place the step was judged at: it waits in a queue of its own for the close after
      // that place (given earlier, a close in between would keep it for the steps decided before
      // that one; queued among this host's late runs, it would bring their release forward).
      controls_.emplace(run.judgement->order, run);
      return;
    }
    // Where this host's runs ran: another host's runs it keeps (seeds, controls) are not its.
    if (!run.placement.empty() && !(run.judgement && run.judgement->is_fleet())) {
      PlacedCounts::add(*where(run.placement).count, run.observed_at);
    }
    const core::Timestamp order = run.judgement ? run.judgement->order : run.observed_at;
    // A run the daemon judged just after a newer one of its key (it came a little late) waits
    // for the stream to reach the place it was judged at (the stream is where this run was
    // observed: a late run's own later place would release the others ahead of their time).
    release_late(run.observed_at);
    if (order > run.observed_at) {
      late_.push_back(run);
      return;
    }
    judge(run, order);
  }

  core::Status finish() {
    release_late(core::Timestamp::max());
    release_controls(core::Timestamp::max());
    // The steps still held are decided now. Those of a cycle the daemon never closed (a crash,
    // a rebuild mid-cycle) with its fleet's runs read now, as its close would have
    // (Options::before_last_close); those of a closed cycle with what it stored then.
    if (options_.before_last_close && !open_runs_.empty() && out_.watch.holds_triggers()) {
      KW_TRY(options_.before_last_close(out_.watch));
    }
    collect(out_.watch.close_cycle());
    while (next_action_ < actions_.size()) act(actions_[next_action_++]);
    // What the daemon fired at runs whose cycle never closed.
    out_.unsettled_runs = open_runs_.size();
    const auto unsettled = [&](const core::Alert& a) {
      // A GPU or host alert: fired at the newest run of a cycle that had a run still open.
      if (!a.placement.empty() && a.members.empty() && a.incident.empty()) {
        return first_open_ && a.fired.observed_at >= *first_open_;
      }
      return open_runs_.contains(a.key.identity() + "/" + a.fired.external_id);
    };
    for (const auto& alert : out_.alerts) {
      if (unsettled(alert) || std::any_of(alert.members.begin(), alert.members.end(), unsettled)) {
        out_.unsettled.insert(alert.id);
      }
    }
    return {};
  }

 private:
  void release_late(core::Timestamp until) {
    std::stable_sort(late_.begin(), late_.end(), [](const auto& a, const auto& b) {
      return a.judgement->order < b.judgement->order;
    });
    while (!late_.empty() && late_.front().judgement->order <= until) {
      const storage::RunSummary run = std::move(late_.front());
      late_.erase(late_.begin());
      judge(run, run.judgement->order);
    }
  }

  // The controls read for steps judged at or before `until`, to the Watch (it holds each apart
  // until the close that decides its step).
  void release_controls(core::Timestamp until) {
    while (!controls_.empty() && controls_.begin()->first <= until) {
      const storage::RunSummary& run = controls_.begin()->second;
      const auto key = out_.labels.find(run.key_id);
      if (key != out_.labels.end()) {
        out_.watch.add_fleet_run(key->second, observation_of(run), controls_.begin()->first);
      }
      controls_.erase(controls_.begin());
    }
  }

  void collect(std::vector<detectors::AlertEvent> events) {
    for (auto& event : events) {
      // A member is listed inside its incident, whose event follows each change of it.
      if (core::is_incident_member(event.alert)) continue;
      out_.changed_at[event.alert.id] = event.at;
      const auto [it, fresh] = index_.try_emplace(event.alert.id, out_.alerts.size());
      if (fresh) {
        out_.alerts.push_back(std::move(event.alert));
      } else {
        out_.alerts[it->second] = std::move(event.alert);
      }
    }
  }

  void act(const storage::AlertActionRow& action) {
    // An operator acts on alerts already decided: what the replay still holds is decided first.
    close();
    const auto op = action.action;
    if (action.key_id == 0) {  // an incident, or a GPU or host alert (they have no key)
      auto events = out_.watch.act_on_incident(action.alert_id, op, action.at);
      if (events.empty()) events = out_.watch.act_on_unit(action.alert_id, op, action.at);
      collect(std::move(events));
      return;
    }
    const auto key = out_.labels.find(action.key_id);
    if (key == out_.labels.end()) return;
    collect(out_.watch.act(key->second.identity(), action.alert_id, op, action.at));
    if (op == detectors::OperatorAction::Rebaseline) rebaselined_ = true;
  }

  void judge(const storage::RunSummary& run, core::Timestamp order) {
    // Operator actions replay at their place in time, between the runs around them.
    while (next_action_ < actions_.size() && actions_[next_action_].at <= order) {
      act(actions_[next_action_++]);
    }
    const auto key = out_.labels.find(run.key_id);
    if (key == out_.labels.end()) return;
    detectors::Observation observation = observation_of(run);
    observation.observed_at = order;
    const auto confirm = confirm_of(run, options_);
    if (!confirm) {  // stored by the daemon without a verdict: never judged
      if (options_.trace) {
        TracedRun traced;
        traced.run = run;
        traced.verdict.kind = detectors::VerdictKind::Inconclusive;
        traced.verdict.explanation =
            "stored, not judged: older than its key's newest run beyond the clock tolerance";
        out_.trace.push_back(std::move(traced));
      }
      return;
    }
    if (run.judgement && run.judgement->is_seed()) {
      // Another host's run this host started the key from (storage.warm_start): it builds the
      // key as Engine::warm_start did and is no part of this host's cycles, rounds or controls,
      // wherever it falls among this host's runs.
      auto step = out_.watch.observe_seed(key->second, observation, *confirm);
      trace(run, step, observation);
      collect(std::move(step.events));
      return;
    }
    // The daemon's cycle or posted batch ended before this one; a gap ends a cycle too. In
    // history the daemon never judged, a key's run of a GPU (or host) that already ran it since
    // the last close begins the next round: the GPUs and hosts are compared round by round.
    if (previous_ && order - *previous_ > options_.parameters.controls.cycle_gap) close();
    if (!run.judgement && !run.placement.empty()) {
      const std::uint32_t unit = where(run.placement).unit;
      auto& rounds = last_round_[run.key_id];
      if (rounds.size() <= unit) rounds.resize(unit + 1, 0);
      if (rounds[unit] == round_) close();  // (it leaves last_round_ as it is)
      rounds[unit] = round_;
    }
    if (run.judgement && run.judgement->cycle != 0) {
      if (cycle_ && *cycle_ != run.judgement->cycle) close();
      cycle_ = run.judgement->cycle;
    }
    previous_ = order;
    if (run.judged == storage::Judged::CycleOpen) {
      open_runs_.insert(key->second.identity() + "/" + observation.external_id);
      if (!first_open_ || order < *first_open_) first_open_ = order;
    }
    auto step = out_.watch.observe(key->second, observation, *confirm);
    trace(run, step, observation);
    collect(std::move(step.events));
  }

  void trace(const storage::RunSummary& run, detectors::MonitorStep& step,
             detectors::Observation& observation) {
    if (!options_.trace) return;
    TracedRun traced;
    traced.run = run;
    traced.verdict = std::move(step.detection.verdict);
    traced.role = step.detection.role;
    if (previous_run_) traced.changes = detectors::attribute(*previous_run_, observation);
    traced.rebaseline = std::exchange(rebaselined_, false);
    out_.trace.push_back(std::move(traced));
    previous_run_ = std::move(observation);
  }

  void close() {
    // The controls of the steps judged so far: the daemon read them for this close.
    release_controls(previous_.value_or(core::Timestamp::min()));
    collect(out_.watch.close_cycle());
    ++round_;
  }

  // What the replay keeps of a shared placement (storage reads one per host and GPU): a small
  // number for its host and GPU (its host and its GPU's UUID, else index) and its count.
  struct Where {
    core::SharedPlacement kept;  // so that its address is not reused while it is a key
    std::uint32_t unit = 0;
    PlacedCount* count = nullptr;  // in out_.placed, which outlives this driver
  };
  // Found by the placement's address: no string is made or hashed per run.
  Where& where(const core::SharedPlacement& placement) {
    auto [it, fresh] = where_.try_emplace(placement.address());
    if (fresh) {
      const core::Placement& p = *placement;
      std::string unit = p.host + '\0' + (p.gpu_uuid.empty() ? p.gpu : p.gpu_uuid);
      const auto known =
          units_.try_emplace(std::move(unit), static_cast<std::uint32_t>(units_.size())).first;
      it->second = Where{placement, known->second, &out_.placed.slot(p)};
    }
    return it->second;
  }

  Replay& out_;
  const Options& options_;
  std::vector<storage::AlertActionRow> actions_;
  std::size_t next_action_ = 0;
  std::vector<storage::RunSummary> late_;
  std::multimap<core::Timestamp, storage::RunSummary> controls_;  // by the step they were read for
  std::optional<core::Timestamp> previous_;
  std::optional<std::int64_t> cycle_;
  std::map<core::AlertId, std::size_t> index_;
  std::set<std::string> open_runs_;  // "<key identity>/<externalId>" of runs in an open cycle
  std::optional<core::Timestamp> first_open_;  // the oldest of them
  // Closes so far: the round of never-judged placed runs since the last close. By key id and
  // host and GPU (Where::unit), the round in which it last ran (0: none).
  std::uint64_t round_ = 1;
  std::unordered_map<std::int64_t, std::vector<std::uint64_t>> last_round_;
  std::unordered_map<const core::Placement*, Where> where_;
  std::unordered_map<std::string, std::uint32_t> units_;  // "<host>\0<GPU>" -> Where::unit
  std::optional<detectors::Observation> previous_run_;
  bool rebaselined_ = false;
};

}  // namespace

void PlacedCounts::count(const core::Placement& placement, core::Timestamp observed_at) {
  if (!placement.empty()) add(slot(placement), observed_at);
}

PlacedCount& PlacedCounts::slot(const core::Placement& placement) {
  core::UnitId::write(key_, placement);
  auto it = counts_.find(key_);
  if (it == counts_.end()) {
    it = counts_.emplace(key_, PlacedCount{placement, 0, core::Timestamp::min()}).first;
  }
  return it->second;
}

void PlacedCounts::add(PlacedCount& count, core::Timestamp observed_at) {
  ++count.runs;
  count.last_observed = std::max(count.last_observed, observed_at);
}

core::Result<std::map<std::int64_t, core::KeyLabels>> key_labels_by_id(
    const storage::RunStore& runs) {
  std::map<std::int64_t, core::KeyLabels> labels;
  for (const auto& key : KW_TRY(runs.keys())) labels[key.id] = detectors::key_labels(key.key);
  return labels;
}

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
  o.placement = run.placement;
  o.unnamed_hosts = detectors::spans_unnamed_hosts(run.source, *o.placement);
  return o;
}

std::optional<detectors::ConfirmPolicy> confirm_of(const storage::RunSummary& run,
                                                   const Options& options) {
  if (run.judgement && run.judgement->confirmation == storage::Confirmation::NotJudged) {
    return std::nullopt;
  }
  if (options.confirm) return *options.confirm;
  if (!run.judgement) return kHistoryConfirm;
  return run.judgement->confirmation == storage::Confirmation::Next
             ? detectors::ConfirmPolicy::Next
             : detectors::ConfirmPolicy::None;
}

core::Result<Replay> replay(storage::Connection& store, const Options& options) {
  Replay out(options.parameters);
  const storage::RunStore runs(store);
  for (auto& [id, key] : KW_TRY(key_labels_by_id(runs))) {
    if (options.only_key && *options.only_key != id) continue;
    out.key_ids[key.identity()] = id;
    out.labels.emplace(id, std::move(key));
  }
  std::vector<storage::AlertActionRow> actions;
  if (options.operator_actions) {
    for (auto& action : KW_TRY(storage::AlertStore(store).actions())) {
      // One key alone: its own actions (an incident's were recorded on each member too).
      if (options.only_key && action.key_id != *options.only_key) continue;
      actions.push_back(std::move(action));
    }
  }
  Driver driver(out, options, std::move(actions));
  const auto feed = [&](const storage::RunSummary& run) -> core::Status {
    driver.feed(run);
    return {};
  };
  if (options.only_key) {
    for (const auto& run : KW_TRY(runs.key_summaries(*options.only_key))) KW_TRY(feed(run));
  } else {
    KW_TRY(runs.for_each_in_time_order(feed));
  }
  KW_TRY(driver.finish());
  return out;
}

}  // namespace kernelwatch::replay
