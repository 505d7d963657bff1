// The daemon's detection path, a thin translator between the detectors and the store: a run in
// is stored and judged by the detectors' Watch in one transaction; the alert events the Watch
// emits become typed alert rows; a cycle's close (the end of a scheduled cycle or of a posted
// batch) lets the Watch decide its held steps (the key's own alert or an environment incident)
// and stores them; a flush queues what the rows' states say is due (fired, resolved, reminder)
// as one grouped notification per destination. io_context thread only.
//   engine.cpp         process(), close_cycle(), acknowledge(), status(): events to rows
//   engine_rebuild.cpp rebuild(): the one replay (replay/) of the history and the operator's
//                      actions at start, then what a crash kept from being stored
//   engine_notify.cpp  flush_notifications(), next_reminder(): rows to the outbox
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/record.hpp"
#include "core/run.hpp"
#include "detectors/alert_state.hpp"
#include "detectors/judge.hpp"
#include "detectors/parameters.hpp"
#include "detectors/standing.hpp"
#include "detectors/watch.hpp"
#include "replay/replay.hpp"
#include "storage/alerts.hpp"
#include "storage/connection.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::daemon {

struct EngineOptions {
  detectors::DetectorParameters parameters;  // confirm is set per key (see parameters_for)
  detectors::AlertPolicy policy;
  int confirm_reruns = 1;                 // 0: the daemon's own runs alert without a rerun
  std::vector<std::string> destinations;  // configured notifier names
  std::string host;                       // names this instance in notifications
  // Where another host's schema of the same PostgreSQL database is (its URL): set with
  // warm_start or fleet_controls.
  std::function<std::filesystem::path(const std::string& schema)> fleet_location;
  // storage.warm_start: a key new to this host starts from the fleet's runs (engine_warm.cpp).
  bool warm_start = false;
  // storage.fleet_controls: the held steps of a close are decided with the other hosts' runs of
  // their keys around them (engine_fleet.cpp, detectors/fleet.hpp).
  bool fleet_controls = false;
};

// A key new to this host that started from the fleet's runs of it (storage.warm_start).
struct WarmStart {
  std::size_t runs = 0;            // the fleet's runs it started from, stored as its seeds
  std::vector<std::string> hosts;  // the schemas they came from
};

// What one processed run did.
struct Processed {
  bool duplicate = false;  // already stored: nothing else happened
  std::string key_display;
  std::string key_digest;
  detectors::Verdict verdict;
  detectors::RunRole role = detectors::RunRole::Ignored;
  bool awaits_confirmation = false;  // breached: rerun the case before the next one
  std::vector<core::AlertId> fired;  // alert ids fired now (failed runs; steps wait for the close)
  std::vector<core::AlertId> resolved;  // alert ids
  // The run began a new key although an older key has its benchmark, provider, workload,
  // environment and protocol name: the protocol's settings changed (bench.warmup or
  // bench.repetitions, the cache flush size, the harness), so detection starts over here.
  std::optional<core::KeyLabels> replaced_key;
  // The run's key was new to this host and started from the fleet's runs (its first run here).
  std::optional<WarmStart> warm_start;
  // What the fleet could not give (a key that started cold: too few runs, or runs that moved; a
  // host's schema not read): on the batch's first run.
  std::vector<std::string> warm_notes;
};

// Keys whose protocol changed: the same benchmark, provider, workload, environment and protocol
// name under more than one protocol digest. `current` has the newest run; `previous`, newest
// first, are no longer compared with it.
struct ProtocolChange {
  core::KeyLabels current;
  std::vector<core::KeyLabels> previous;
  std::vector<core::Timestamp> previous_last_run;  // one per previous key
};

// What closing a cycle decided.
struct CycleClose {
  std::vector<core::Alert> fired;      // the keys' own alerts (step, drift)
  std::vector<core::Alert> incidents;  // environment incidents, with their member keys
};

// The latest view of one key for the status API and the metrics.
struct KeyStatus {
  std::int64_t key_id = 0;
  core::KeyLabels key;
  std::optional<detectors::Watch::LastRun> last_run;
  detectors::Verdict last_verdict;
  std::optional<core::Alert> open_alert;  // this daemon's or imported history's
  std::optional<core::Alert> open_failed_alert;
  bool open_alert_from_history = false;  // found by the replay of imported history: never paged
  detectors::Standing standing;          // how every view shows it (state, change, band)
};

class Engine {
 public:
  Engine(storage::Connection& store, EngineOptions options);

  // Replays every key's runs and the operator's actions; stores what a crash kept from being
  // stored (the alerts of judged runs whose cycle never closed) and the alerts imported history
  // implies (origin history: listed, never notified); notifies nothing. Runs the daemon never
  // judged (imported) are judged as `kernelwatch backtest` judges them by default: a breach needs
  // the next stored run to agree (kHistoryConfirm).
  // A rebuild that fails leaves the engine out of line with the store: process, close_cycle and
  // acknowledge replay first and refuse (Unavailable) while that fails.
  [[nodiscard]] core::Status rebuild();
  // Why the detectors are not in line with the store (a rebuild failed); nullopt when they are.
  [[nodiscard]] const std::optional<std::string>& out_of_line() const { return out_of_line_; }
  // Stores and judges one run. A run older than its key's newest is stored, not judged.
  [[nodiscard]] core::Result<Processed> process(const core::Run& run, core::Timestamp now);
  // process() for each run, in order, in ONE transaction: an error (a full disk) stores none
  // of them.
  [[nodiscard]] core::Result<std::vector<Processed>> process_batch(std::span<const core::Run> runs,
                                                                   core::Timestamp now);
  // The runs judged against the live state of their keys (detectors/judge.hpp), grouped by
  // key: nothing stored, no alert, no detector state changed (POST /api/v1/judge).
  [[nodiscard]] std::vector<detectors::CandidateCase> judge(std::span<const core::Run> runs) const;
  // Ends a cycle: the held steps become the keys' alerts or environment incidents, stored.
  [[nodiscard]] core::Result<CycleClose> close_cycle(core::Timestamp now);
  // close_cycle(), then queues every notice the alert rows say is due (detectors::notice_due)
  // as ONE grouped notification per destination, in one transaction. Returns the outbox rows
  // written. Call after a cycle, a posted batch, at start, and when a reminder falls due.
  [[nodiscard]] core::Result<std::size_t> flush_notifications(core::Timestamp now);
  // When the next reminder falls due; nullopt when no firing alert was announced.
  [[nodiscard]] core::Result<std::optional<core::Timestamp>> next_reminder() const;
  // Operator action from the API; NotFound for an unknown alert, Conflict for a closed one.
  [[nodiscard]] core::Status acknowledge(const core::AlertId& alert_id, core::OperatorAction action,
                                         core::Timestamp now);

  [[nodiscard]] std::vector<KeyStatus> status() const;
  // status() without its copies, one key at a time (the metrics of thousands of keys): what
  // `visit` gets is valid during the call only.
  struct KeyView {
    std::int64_t key_id = 0;
    const core::KeyLabels* key = nullptr;
    const std::optional<detectors::Watch::LastRun>* last_run = nullptr;
    const detectors::Verdict* last_verdict = nullptr;
    const std::optional<core::Alert>* open_alert = nullptr;
    const std::optional<core::Alert>* open_failed_alert = nullptr;
  };
  void for_each_key(const std::function<void(const KeyView&)>& visit) const;
  [[nodiscard]] std::vector<ProtocolChange> protocol_changes() const;
  // Runs per host and GPU: the replay's count at start, then every run stored since.
  [[nodiscard]] const replay::PlacedCounts& placed_counts() const { return placed_; }
  // Changes whenever status() may have changed (a run, an action, a rebuild): callers cache.
  [[nodiscard]] std::uint64_t generation() const { return generation_; }
  void set_options(EngineOptions options) { options_ = std::move(options); }
  // Told after each change is committed (or rolled back): the key (its row id) got a run or an
  // alert row of it changed; nullopt: any key may have (a replay). Caches of what one key shows
  // (the dashboard's key pages) drop what it names and keep the rest.
  using ChangeListener = std::function<void(std::optional<std::int64_t> key_id)>;
  void set_change_listener(ChangeListener listener) { listener_ = std::move(listener); }
  [[nodiscard]] const EngineOptions& options() const { return options_; }
  // What the closes since the last call could not read of the fleet's runs
  // (storage.fleet_controls: a schema not read), taken: the caller logs them.
  [[nodiscard]] std::vector<std::string> take_fleet_notes() {
    return std::exchange(fleet_notes_, {});
  }

 private:
  using Transaction = storage::Transaction;

  [[nodiscard]] core::Result<Processed> process_run(Transaction& tx, const core::Run& run,
                                                    core::Timestamp now);
  // engine_warm.cpp: the keys of `runs` new to this host started from the fleet's runs of them
  // (options_.fleet_location set), stored as their seeds; what happened in warm_ and warm_notes_.
  [[nodiscard]] core::Status warm_start(std::span<const core::Run> runs);
  // engine_fleet.cpp: the other hosts' runs of `watch`'s held steps' keys around each step
  // (options_.fleet_controls), stored in `tx` as controls and given to `watch` before it closes
  // (the engine's own, or a rebuild's replay deciding a cycle that never closed).
  [[nodiscard]] core::Status read_fleet_controls(Transaction& tx, detectors::Watch& watch);
  [[nodiscard]] core::Status store_events(Transaction& tx,
                                          const std::vector<detectors::AlertEvent>& events,
                                          core::Timestamp now);
  [[nodiscard]] core::Result<CycleClose> close(Transaction& tx, core::Timestamp now);
  [[nodiscard]] core::Status act(const core::AlertId& alert_id, core::OperatorAction action,
                                 core::Timestamp now);
  [[nodiscard]] std::optional<std::int64_t> key_id_of(const core::KeyLabels& key) const;
  // The newest other key a fresh key replaces (ProtocolChange), if any.
  [[nodiscard]] std::optional<core::KeyLabels> replaced_by(const core::KeyLabels& fresh) const;
  // What names a key apart from its protocol's settings (its labels and protocol name): keys
  // that share it are one benchmark whose settings changed.
  [[nodiscard]] static std::string name_of(const core::KeyLabels& key);
  // Files a watched key under name_of(), for replaced_by() and protocol_changes().
  void index_name(const core::KeyLabels& key);
  // rebuild()'s second step (engine_rebuild.cpp): storing what a crash kept from being stored
  // and the alerts imported history implies.
  [[nodiscard]] core::Status recover(storage::AlertStore& alerts, const replay::Replay& replayed);
  [[nodiscard]] core::Status replay_and_recover();
  // After a change was rolled back (the Watch saw what the store did not keep): rebuild, and
  // `cause` with what the rebuild said when it failed too. Never swallows either.
  [[nodiscard]] core::Error after_rollback(core::Error cause);
  // Replays first when a rebuild failed; Unavailable while it still fails.
  [[nodiscard]] core::Status in_line_with_store();
  // The cycle (or posted batch) runs are judged in now: set by its first run, ended by a close.
  [[nodiscard]] std::int64_t cycle_id(core::Timestamp now);
  // Tells the listener which keys the last operation touched (touched_), or every key.
  void publish_changes();
  void publish_all();

  storage::Connection* store_;
  EngineOptions options_;
  detectors::Watch watch_;
  std::map<std::string, std::int64_t> key_ids_;  // key identity -> key row
  std::map<std::int64_t, std::string> identities_;
  // name_of() -> the identities of the watched keys of that name (and perhaps of keys the watch
  // does not hold yet): a fresh key looks up its own name instead of sorting every key (a POST of
  // 400 runs of new keys beside 20,000 keys took 16-23 s).
  std::unordered_map<std::string, std::set<std::string>> same_name_;
  std::set<core::AlertId> history_alerts_;  // ids of the stored alerts of origin history
  replay::PlacedCounts placed_;
  std::uint64_t generation_ = 0;
  std::int64_t cycle_ = 0;          // the open cycle's id (0: none open)
  std::int64_t last_cycle_ = 0;     // the last one's, so that the next differs
  std::set<std::int64_t> touched_;  // key rows changed by the operation under way
  ChangeListener listener_;
  std::optional<std::string> out_of_line_;  // what the failed rebuild said
  // Keys of the batch under way that started warm (by identity; taken by their first run) and
  // what the fleet could not give (taken by the batch's first run).
  std::map<std::string, WarmStart> warm_;
  std::vector<std::string> warm_notes_;
  // What the fleet could not give at the last close (a schema not read): logged by the caller.
  std::vector<std::string> fleet_notes_;
};

// One log line: "<key>: new to this host, started from N run(s) of the fleet (hosts a, b) ...".
[[nodiscard]] std::string describe_warm_start(const std::string& key_display,
                                              const WarmStart& warm);

// How the daemon confirms a run it judges: a run of a source of the catalogue that declares its
// key's next run (runners/sources.hpp: kernelwatch's kernels, liger-bench, command,
// liger-scripts) by that run (ConfirmPolicy::Next) when confirm_reruns > 0; any other run
// (posted by another tool) cannot be rerun and is judged alone. Recorded with the run, so every
// replay confirms it the same way; runs it never judged (imported) are confirmed by the next stored
// run (replay::kHistoryConfirm). (`source`: the run's sourceNative.source.)
[[nodiscard]] detectors::ConfirmPolicy confirm_for(const EngineOptions& options,
                                                   std::string_view source);

// The replay options of the daemon's configuration: its detector parameters, each run confirmed
// as the daemon judged it, the operator's actions. What status, the dashboard and the report show.
[[nodiscard]] replay::Options replay_options(const EngineOptions& options);

}  // namespace kernelwatch::daemon
