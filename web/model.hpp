// What the dashboard's pages show, gathered from the store through the one replay (replay/): one
// key's history (each run's band, verdict, role, its alerts, what changed at it), the overview's
// rows, and an alert with its notifications. Storage, detectors and replay; no HTML.
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
#include "detectors/standing.hpp"
#include "detectors/watch.hpp"
#include "replay/replay.hpp"
#include "storage/alerts.hpp"
#include "storage/connection.hpp"
#include "storage/outbox.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::web {

// How history is replayed for the pages: the one replay (replay/) with the daemon's detector
// parameters, each run confirmed as the daemon judged it, the operator's actions.
using ReplayOptions = replay::Options;

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

// The alerts of one key among every alert of a whole replay (or the stored ones): its own, and
// its steps inside incidents (each a member, its `incident` naming the incident), firing order.
[[nodiscard]] std::vector<core::Alert> alerts_of_key(const std::vector<core::Alert>& alerts,
                                                     const core::KeyLabels& key);

// A key's whole history as the one replay judges it (its runs through the key's detector, the
// operator's actions at their place in time), with the key's alerts as the whole replay raised
// them (alerts_of_key of the stored alerts or of a whole replay's): a replay of one key alone
// judges each run the same way, but only the whole one sees the incidents.
struct KeyReplay {
  std::int64_t key_id = 0;
  core::KeyLabels key;
  std::vector<ReplayedRun> runs;  // oldest first
  std::vector<core::Alert>
      alerts;  // the key's alerts, in firing order, as their lifecycle left them
};

// nullopt when no key has this reference (or it is not 64 hex digits). `alerts`: every alert of
// the whole replay (the stored ones, served; a whole replay's, in the report).
[[nodiscard]] core::Result<std::optional<KeyReplay>> replay_key(
    storage::Connection& store, std::string_view ref, const ReplayOptions& options,
    const std::vector<core::Alert>& alerts);
[[nodiscard]] core::Result<KeyReplay> replay_key_id(storage::Connection& store, std::int64_t key_id,
                                                    const ReplayOptions& options,
                                                    const std::vector<core::Alert>& alerts);

// A key's state on the overview: the one vocabulary (core::KeyState).
using core::KeyState;

struct KeyRow {
  std::int64_t key_id = 0;
  core::KeyLabels key;
  detectors::Standing standing;  // state, change and band, as every view shows them
  std::optional<detectors::Watch::LastRun> last_run;
  std::string alert_id;  // the open alert's page id (a member: its incident's); "" when none
  core::Direction alert_direction = core::Direction::Regression;
  std::vector<std::int64_t> spark;  // newest judgeable medians (ns), oldest first
  std::int64_t run_count = 0;
};

// A row from a key's state (the engine's or a whole replay's): its standing and open alert.
[[nodiscard]] KeyRow key_row(std::int64_t key_id, const core::KeyLabels& key,
                             const std::optional<detectors::Watch::LastRun>& last_run,
                             const detectors::Standing& standing);

// Newest medians per key for the sparklines, and run counts: added to rows built elsewhere
// (the daemon builds them from its engine). One query for every key.
[[nodiscard]] core::Status add_sparklines(const storage::RunStore& runs, std::vector<KeyRow>& rows,
                                          std::size_t points = 24);

// One GPU on the overview's "Hosts and GPUs" (or a host's runs that name no GPU: gpu and UUID
// empty): its runs, and the open alert that says it (or its host) is out of line with its
// siblings (docs/DETECTION.md, "Siblings as controls").
struct PlacedRow {
  core::Placement placement;
  std::int64_t runs = 0;
  core::Timestamp last_run{};
  std::string alert_id;  // the open GPU alert's page id; "" when in line
  core::AlertState alert_state = core::AlertState::Firing;
  std::string alert_text;     // its explanation
  std::string host_alert_id;  // the open alert about its whole host; "" when none
  core::AlertState host_alert_state = core::AlertState::Firing;
};

// Every host's and GPU's row, by host then GPU index: the runs counted by their labels (a
// replay's, or the daemon's engine's) and the open GPU and host alerts among `alerts` (the
// stored ones, or a whole replay's).
[[nodiscard]] std::vector<PlacedRow> placed_rows(const replay::PlacedCounts& counts,
                                                 const std::vector<core::Alert>& alerts);

// Every key's row and every alert, from the one whole replay of the store (the static report,
// which has no engine): what the daemon's engine would show after its start.
struct SiteModel {
  std::vector<KeyRow> rows;
  std::vector<core::Alert> alerts;  // top level: keys' alerts and incidents (with members)
  std::vector<PlacedRow> placed;    // hosts and GPUs
};
[[nodiscard]] core::Result<SiteModel> site_from_replay(storage::Connection& store,
                                                       const ReplayOptions& options);

// An alert page's content: the alert (from `alerts`, the whole replay's or the stored ones),
// its stored row when the daemon stored it (with its notifications), and its key's history.
struct AlertView {
  core::Alert alert;
  std::optional<storage::AlertRow> row;
  std::vector<storage::OutboxRow> notifications;
  std::optional<KeyReplay> replay;  // the key's history (nullopt for an incident)
};

// `id`: the short id the API lists or the long one. nullopt when no alert has it.
[[nodiscard]] core::Result<std::optional<AlertView>> find_alert(
    storage::Connection& store, std::string_view id, const ReplayOptions& options,
    const std::vector<core::Alert>& alerts);

// Every stored alert, newest first (what the served pages read as the whole replay's alerts:
// the daemon stores each one its replay raised).
[[nodiscard]] core::Result<std::vector<core::Alert>> stored_alerts(storage::Connection& store);

}  // namespace kernelwatch::web
