// What the dashboard's pages show, gathered from the store: one key's history replayed through
// the detectors (each run's band, verdict, role, the alerts it raised, what changed at it), the
// overview's rows, and an alert with its notifications. Storage and detectors only; no HTML.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "core/error.hpp"
#include "detectors/alert_state.hpp"
#include "detectors/parameters.hpp"
#include "detectors/watch.hpp"
#include "storage/alerts.hpp"
#include "storage/connection.hpp"
#include "storage/outbox.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::web {

// How a key's history is replayed: the detector parameters (their `confirm` applies to every
// run, as `kernelwatch backtest --confirm` does; the dashboard uses "next", the backtest's
// default), or per run source when confirm_for is set.
struct ReplayOptions {
  detectors::DetectorParameters parameters;
  std::function<detectors::ConfirmPolicy(std::string_view source)> confirm_for;
};

// The id an alert page is addressed by: the id the API shows (`GET /api/v1/alerts`). The one
// place to change when alert ids change.
[[nodiscard]] std::string alert_page_id(const core::Alert& alert);

// A key's URL-safe reference: its digest's 64 hex digits (without "sha256:").
[[nodiscard]] std::string key_ref(const core::KeyLabels& key);

// One run of a key as the replay judged it.
struct ReplayedRun {
  storage::RunSummary run;
  detectors::Verdict verdict;  // against the band of the baseline it was judged by
  detectors::RunRole role = detectors::RunRole::Ignored;
  std::vector<core::AttributionChange> changes;  // against the previous run (version, digest,
                                                 // software)
  bool segment_start = false;  // the first run of a new segment (a confirmed step's onset)
  bool rebaseline = false;     // an operator rebaselined just before this run
};

// A key's whole history replayed the way the daemon judges it (a detectors::Watch, cycles
// closing at gaps, the operator's actions at their place in time). The key alone: the
// cross-key controls, which may turn a step into an environment incident, are not replayed.
struct KeyReplay {
  std::int64_t key_id = 0;
  core::KeyLabels key;
  std::vector<ReplayedRun> runs;    // oldest first
  std::vector<core::Alert> alerts;  // every alert the replay raised, in firing order, as its
                                    // lifecycle left it
};

// nullopt when no key has this reference (or it is not 64 hex digits).
[[nodiscard]] core::Result<std::optional<KeyReplay>> replay_key(storage::Connection& store,
                                                                std::string_view ref,
                                                                const ReplayOptions& options);
[[nodiscard]] core::Result<KeyReplay> replay_key_id(storage::Connection& store, std::int64_t key_id,
                                                    const ReplayOptions& options);

// A key's state on the overview.
enum class KeyState { Firing, Acknowledged, Failing, Breached, InsufficientData, InBand };
[[nodiscard]] std::string_view to_string(KeyState state) noexcept;  // "firing", "in_band", ...
[[nodiscard]] std::optional<KeyState> parse_key_state(std::string_view text);

struct KeyRow {
  std::int64_t key_id = 0;
  core::KeyLabels key;
  KeyState state = KeyState::InsufficientData;
  std::optional<detectors::Watch::LastRun> last_run;
  detectors::Verdict verdict;  // of the newest judgeable run
  std::string alert_id;        // the open alert (page id); "" when none
  core::Direction alert_direction = core::Direction::Regression;
  std::vector<std::int64_t> spark;  // newest judgeable medians (ns), oldest first
  std::int64_t run_count = 0;
};

// The state a key shows: an open failed alert, an open step/drift alert (its state), a breach
// waiting for confirmation, too little history, or in band.
[[nodiscard]] KeyState key_state(const detectors::Verdict& verdict,
                                 const std::optional<core::Alert>& open_alert,
                                 const std::optional<core::Alert>& open_failed_alert);

// Newest medians per key for the sparklines, and run counts: added to rows built elsewhere
// (the daemon builds them from its engine). One query for every key.
[[nodiscard]] core::Status add_sparklines(const storage::RunStore& runs, std::vector<KeyRow>& rows,
                                          std::size_t points = 24);

// Every key's row from a replay of the whole store (the static report, which has no engine):
// the Watch over every key as the daemon replays it at start; stored alerts' states win.
[[nodiscard]] core::Result<std::vector<KeyRow>> key_rows_from_replay(storage::Connection& store,
                                                                     const ReplayOptions& options);

// An alert page's content: the stored row when the daemon stored it (with its notifications),
// else the alert as the key's replay raised it (history imported, never paged).
struct AlertView {
  core::Alert alert;
  std::optional<storage::AlertRow> row;
  std::vector<storage::OutboxRow> notifications;
  std::optional<KeyReplay> replay;  // the key's history (nullopt for an environment incident)
};

// nullopt when neither the store nor the key's replay knows the id.
[[nodiscard]] core::Result<std::optional<AlertView>> find_alert(storage::Connection& store,
                                                                std::string_view id,
                                                                const ReplayOptions& options);

}  // namespace kernelwatch::web
