// The daemon's detection path: one run in, one transaction out (the run, the alert state it
// changes and the notifications it owes, which go out grouped per cycle). Keeps one KeyMonitor
// per key, rebuilt at start by replaying history and operator actions. io_context thread only.
// Composition code over storage, detectors and notifiers.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/record.hpp"
#include "detectors/alert_state.hpp"
#include "detectors/controls.hpp"
#include "detectors/parameters.hpp"
#include "notifiers/notification.hpp"
#include "storage/alerts.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::daemon {

struct EngineOptions {
  detectors::DetectorParameters parameters;  // confirm is set per key (see confirm_for)
  detectors::AlertPolicy policy;
  int confirm_reruns = 1;                 // 0: the daemon's own runs alert without a rerun
  std::vector<std::string> destinations;  // configured notifier names
  std::string host;                       // names this instance in notifications
};

// What one processed run did.
struct Processed {
  bool duplicate = false;  // already stored: nothing else happened
  std::string key_display;
  detectors::Verdict verdict;
  detectors::RunRole role = detectors::RunRole::Ignored;
  bool awaits_confirmation = false;   // breached: rerun the case before the next one
  std::vector<std::string> fired;     // alert ids
  std::vector<std::string> resolved;  // alert ids
  std::size_t notifications = 0;      // notifications owed (sent by flush_notifications)
};

// The latest view of one key for the status API and the metrics.
struct KeyStatus {
  std::int64_t key_id = 0;
  detectors::KeyLabels key;
  std::optional<detectors::Observation> last_run;
  detectors::Verdict last_verdict;
  std::optional<detectors::Alert> open_alert;
  std::optional<std::string> open_failed_alert;  // id of the key's open `failed` alert
};

class Engine {
 public:
  Engine(storage::Connection& store, EngineOptions options);

  // Replays every key's runs and the operator's actions; notifies nothing.
  [[nodiscard]] core::Status rebuild();
  // Stores and judges one run. A run older than its key's newest is stored, not judged.
  [[nodiscard]] core::Result<Processed> process(const core::Record& record, core::Timestamp now);
  // Sends every notification the alerts owe as ONE grouped notification per destination (the
  // alerts a cycle or a posted batch raised or resolved) and clears them, in one transaction.
  // Returns the outbox rows written. Call after a cycle, a posted batch, and at start.
  [[nodiscard]] core::Result<std::size_t> flush_notifications(core::Timestamp now);
  // Reminders: a firing, unacknowledged alert owes a notification again repeat_interval after
  // its last one was queued (stored, so a restart neither advances nor repeats it). Returns how
  // many were owed (send them with flush_notifications()).
  [[nodiscard]] core::Result<std::size_t> tick(core::Timestamp now);
  // When tick() next has a reminder to owe; nullopt when none is pending.
  [[nodiscard]] core::Result<std::optional<core::Timestamp>> next_reminder() const;
  // Operator action from the API; NotFound for an unknown alert, Conflict for a closed one.
  [[nodiscard]] core::Status acknowledge(std::string_view alert_id, bool rebaseline,
                                         core::Timestamp now);

  [[nodiscard]] std::vector<KeyStatus> status() const;
  // Changes whenever status() may have changed (a run, an action, a rebuild): callers cache.
  [[nodiscard]] std::uint64_t generation() const { return generation_; }
  void set_options(EngineOptions options) { options_ = std::move(options); }
  [[nodiscard]] const EngineOptions& options() const { return options_; }

 private:
  struct KeyState {
    std::int64_t key_id = 0;
    std::unique_ptr<detectors::KeyMonitor> monitor;
    std::optional<detectors::Observation> last_run;
    detectors::Verdict last_verdict;
    std::optional<std::string> open_failed_alert;
    std::vector<detectors::RunVerdictRecord> verdicts;  // recent, oldest first (the controls)
    // An open alert the replay of imported history implies but this daemon never raised (no
    // alert row): not reported as the key's open alert.
    std::string unraised_alert;
  };
  KeyState& state_for(std::int64_t key_id, const detectors::KeyLabels& key,
                      const core::Record& record);
  [[nodiscard]] core::Status write_alert(storage::Transaction& tx, std::int64_t key_id,
                                         const detectors::Alert& alert, core::Timestamp now);

  storage::Connection* store_;
  EngineOptions options_;
  std::map<std::int64_t, KeyState> keys_;
  std::uint64_t generation_ = 0;
  // Step alerts fired since the last flush: the controls may turn them into one environment
  // incident before they are sent.
  std::vector<std::pair<std::int64_t, detectors::Alert>> unsent_steps_;
  void replay_action(KeyState& state, const storage::AlertActionRow& action);
  [[nodiscard]] core::Result<Processed> process_run(const core::Record& record,
                                                    core::Timestamp now);
  [[nodiscard]] core::Status acknowledge_alert(std::string_view alert_id, bool rebaseline,
                                               core::Timestamp now);
  void remember_verdict(KeyState& state, const detectors::Observation& run,
                        const detectors::Verdict& verdict);
  [[nodiscard]] core::Status apply_controls(storage::Transaction& tx);
};

// Detector parameters for one key: the daemon's own runs (source "kernelwatch") are confirmed
// by an immediate rerun (ConfirmPolicy::Next) when confirm_reruns > 0; posted and imported runs
// cannot be rerun and are judged alone.
[[nodiscard]] detectors::DetectorParameters parameters_for(const EngineOptions& options,
                                                           const core::Record& record);

[[nodiscard]] notifiers::Alert to_notification_alert(const detectors::Alert& alert,
                                                     notifiers::AlertState state);

}  // namespace kernelwatch::daemon
