// The one replay of stored history into key states and alerts: every stored run in the order the
// daemon judged it (imported runs in observedAt order), through a detectors::Watch with the
// configured detector parameters, each run confirmed as the daemon confirmed it, cycles closing
// where the daemon closed them (and at gaps longer than cycle_gap; in history it never judged,
// also where a key's run of a GPU or host comes again: GPUs and hosts are compared round by
// round, each run with where it ran, detectors/siblings.hpp), the operator's
// acknowledgements and rebaselines at their place in time. The daemon (its start and SIGHUP, so
// status, the API and the dashboard), `kernelwatch backtest` and `kernelwatch report` all replay
// through it. Storage and detectors only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/alert.hpp"
#include "core/error.hpp"
#include "detectors/alert_state.hpp"
#include "detectors/parameters.hpp"
#include "detectors/watch.hpp"
#include "storage/alerts.hpp"
#include "storage/connection.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::replay {

// How runs the daemon never judged (imported history) are confirmed: by the next stored run, as
// `kernelwatch backtest` does by default.
inline constexpr detectors::ConfirmPolicy kHistoryConfirm = detectors::ConfirmPolicy::Next;

struct Options {
  // The config's detector parameters (their `confirm` is not read: see `confirm`).
  detectors::DetectorParameters parameters;
  // nullopt: each run confirmed as the daemon judged it (the way it recorded, kHistoryConfirm for
  // imported runs). A policy: every run with it (`kernelwatch backtest --confirm`).
  std::optional<detectors::ConfirmPolicy> confirm;
  // The operator's acknowledgements and rebaselines, at their place in time.
  bool operator_actions = true;
  // Replay one key only (its chart): its detector judges each run exactly as the whole replay
  // does, but the cross-key controls see no other key, so its alerts are those of a whole replay
  // (the stored ones), not this one's.
  std::optional<std::int64_t> only_key;
  // Keep each run of only_key with its verdict (Replay::trace).
  bool trace = false;
  // Called with the replay's Watch before the last close when steps of a cycle the daemon judged
  // and never closed (a crash, a rebuild mid-cycle) are still held: the daemon's rebuild reads
  // its fleet's runs for them there (storage.fleet_controls), as its close would have. Its error
  // ends the replay. Unset: the steps are decided with what is stored.
  std::function<core::Status(detectors::Watch&)> before_last_close;
};

// One run of the traced key as the replay judged it.
struct TracedRun {
  storage::RunSummary run;
  detectors::Verdict verdict;  // against the band of the baseline it was judged by
  detectors::RunRole role = detectors::RunRole::Ignored;
  std::vector<core::AttributionChange> changes;  // against the previous run
  bool rebaseline = false;                       // an operator rebaselined just before this run
};

// Runs per host and GPU (their labels; runs that name neither are not counted): the dashboard's
// "Hosts and GPUs", counted as the replay reads the runs (the daemon then counts its new ones),
// so that no page scans every run for them. Keyed "<host>\0<GPU UUID, else index>".
struct PlacedCount {
  core::Placement placement;
  std::int64_t runs = 0;
  core::Timestamp last_observed{};
};
class PlacedCounts {
 public:
  void count(const core::Placement& placement, core::Timestamp observed_at);
  // The count of the host and GPU of `placement` (not empty; made when new, with no run): it
  // stays where it is while this lives (a replay counts each run through its placement's).
  [[nodiscard]] PlacedCount& slot(const core::Placement& placement);
  static void add(PlacedCount& count, core::Timestamp observed_at);
  [[nodiscard]] const std::unordered_map<std::string, PlacedCount>& all() const { return counts_; }

 private:
  std::unordered_map<std::string, PlacedCount> counts_;
  std::string key_;  // reused: no allocation per run
};

struct Replay {
  explicit Replay(const detectors::DetectorParameters& parameters) : watch(parameters) {}

  detectors::Watch watch;                          // every key's state after the last run
  std::map<std::int64_t, core::KeyLabels> labels;  // every key replayed, by its row id
  std::map<std::string, std::int64_t> key_ids;     // key identity -> row id
  // Every alert raised, in firing order, as its last event left it (an incident's members are
  // inside it, not listed by themselves), and the time of that last event.
  std::vector<core::Alert> alerts;
  std::map<core::AlertId, core::Timestamp> changed_at;
  // Ids of the alerts fired at runs the daemon judged whose cycle never closed (a crash came
  // between the run and the close): what it must still store and notify.
  std::set<core::AlertId> unsettled;
  std::size_t unsettled_runs = 0;  // runs the daemon judged whose cycle never closed
  std::vector<TracedRun> trace;    // only_key's runs, oldest first (Options::trace)
  std::size_t runs = 0;            // runs read
  PlacedCounts placed;             // every run read, by host and GPU
};

// Every key's labels by its row id.
[[nodiscard]] core::Result<std::map<std::int64_t, core::KeyLabels>> key_labels_by_id(
    const storage::RunStore& runs);

// A stored run as detector input.
[[nodiscard]] detectors::Observation observation_of(const storage::RunSummary& run);

// How a stored run is confirmed in a replay with these options; nullopt: it is not judged (the
// daemon stored it without judging it).
[[nodiscard]] std::optional<detectors::ConfirmPolicy> confirm_of(const storage::RunSummary& run,
                                                                 const Options& options);

// The replay of `store` (runs, their judgements and the operator's actions).
[[nodiscard]] core::Result<Replay> replay(storage::Connection& store, const Options& options);

}  // namespace kernelwatch::replay
