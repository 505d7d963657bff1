// The alert every module shares: its vocabulary (kind, direction, lifecycle state, what a
// notification said of it), the alert itself as the detectors raise it, the store keeps it, the
// API and the backtest print it and the notifiers send it, and its one JSON form.
// Plain C++ and nlohmann/json; no I/O.
#pragma once

#include <chrono>
#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/placement.hpp"
#include "core/time.hpp"

namespace kernelwatch::core {

// Step: a level change of one key; Drift: a slow trend; Environment: an incident, a shift of one
// environment (host) that several keys show together, reported once with its member keys;
// Failed: the key's runs fail.
enum class AlertKind { Step, Drift, Environment, Failed };

// Regression: slower (a larger median); Improvement: faster.
enum class Direction { Regression, Improvement };

// firing -> acknowledged (operator) -> resolved (back in the band, or a passing run after
// failures) or rebaselined (the new level accepted, or superseded by a newer alert of the key).
enum class AlertState { Firing, Acknowledged, Resolved, Rebaselined };

// What a notification says of an alert: it fires (first time or a reminder), or it resolved.
enum class Notice { Firing, Resolved };

// A key's state, the one vocabulary of the API, `kernelwatch status`, the dashboard and the
// report, worst first: its own alert fires; its runs fail; its step is part of an incident that
// fires; its newest run breached and waits for its confirmation; its alert (or incident) was
// acknowledged; its newest run could not be judged (failed or inconclusive, no failed alert);
// in band; too few runs for a band.
enum class KeyState {
  Firing,
  Failing,
  Incident,
  Breached,
  Acknowledged,
  Inconclusive,
  InBand,
  InsufficientData
};
inline constexpr KeyState kKeyStates[] = {
    KeyState::Firing,       KeyState::Failing,      KeyState::Incident, KeyState::Breached,
    KeyState::Acknowledged, KeyState::Inconclusive, KeyState::InBand,   KeyState::InsufficientData};
// Whether an operator must look at a key in this state (every state before in_band).
[[nodiscard]] constexpr bool is_problem(KeyState state) noexcept {
  return state < KeyState::InBand;
}

[[nodiscard]] std::string_view to_string(AlertKind kind) noexcept;       // "step", ...
[[nodiscard]] std::string_view to_string(Direction direction) noexcept;  // "regression", ...
[[nodiscard]] std::string_view to_string(AlertState state) noexcept;     // "firing", ...
[[nodiscard]] std::string_view to_string(Notice notice) noexcept;        // "firing", "resolved"
[[nodiscard]] std::string_view to_string(KeyState state) noexcept;       // "firing", "in_band", ...

// The inverses; ParseError naming the text and the values allowed.
[[nodiscard]] Result<AlertKind> parse_alert_kind(std::string_view text);
[[nodiscard]] Result<Direction> parse_direction(std::string_view text);
[[nodiscard]] Result<AlertState> parse_alert_state(std::string_view text);
[[nodiscard]] Result<Notice> parse_notice(std::string_view text);
[[nodiscard]] Result<KeyState> parse_key_state(std::string_view text);

[[nodiscard]] constexpr bool is_open(AlertState state) noexcept {
  return state == AlertState::Firing || state == AlertState::Acknowledged;
}

// The human labels of a comparability key (what alerts print) and its digest (identity).
struct KeyLabels {
  std::string benchmark;    // "tvd/backward"
  std::string provider;     // "liger"
  std::string workload;     // "tokens16384-vocab65536-fp32"
  std::string environment;  // "nvidia-h100-80gb-hbm3"
  std::string protocol;     // "liger-bench-do-bench-backward"
  std::string digest;       // ComparabilityKey::digest(); "" in synthetic tests

  [[nodiscard]] std::string display() const;  // "tvd/backward liger <workload> <environment>"
  // The digest, or the display form where there is none: what tells keys apart.
  [[nodiscard]] std::string identity() const { return digest.empty() ? display() : digest; }
};

// A latency band: a run inside it is "in band".
struct Band {
  std::chrono::nanoseconds lower{0};
  std::chrono::nanoseconds upper{0};
  std::chrono::nanoseconds center{0};  // median of the baseline medians (0: not known)

  [[nodiscard]] bool contains(std::chrono::nanoseconds value) const {
    return value >= lower && value <= upper;
  }
};

// A recorded non-key field that changed between the last accepted run and the onset of a step:
// "implementation.version", "implementation.digest" or "software.<name>".
struct AttributionChange {
  std::string field;
  std::string from;  // "" when the earlier run did not record it
  std::string to;    // "" when the later run does not record it

  friend bool operator==(const AttributionChange&, const AttributionChange&) = default;
};

// "implementation version changed 0.6.0 -> 0.6.1; software driver changed 550 -> 560";
// "no recorded implementation or software change" when empty.
[[nodiscard]] std::string describe(const std::vector<AttributionChange>& changes);

// An alert's identity, in its two forms, so that every interface says which one it shows:
// - the long form, "<key identity>@<onset externalId>[/drift]" (or "...@failed@<externalId>", an
//   incident's "incident@..."): what the store, the replay, the webhook's `id` and Alertmanager's
//   `alert_id` label key on;
// - the short form, the first 12 hex digits of sha256(long form): the opaque id the API's `id`,
//   `kernelwatch status`, the dashboard's alert pages and the ack paths show. Derived from the
//   long form alone, so it survives restarts and the replay and never changes over an alert's life.
inline constexpr std::size_t kShortAlertIdLength = 12;
class AlertId {
 public:
  AlertId() = default;
  explicit AlertId(std::string long_form) : long_(std::move(long_form)) {}

  [[nodiscard]] const std::string& long_form() const noexcept { return long_; }
  // "" for the empty id (an alert that is no incident's member has an empty `incident`).
  [[nodiscard]] std::string short_form() const;
  [[nodiscard]] bool empty() const noexcept { return long_.empty(); }

  friend bool operator==(const AlertId&, const AlertId&) = default;
  friend auto operator<=>(const AlertId&, const AlertId&) = default;

 private:
  std::string long_;
};

// What a person or a link names an alert by: its short form (12 lower-case hex digits) or its
// long form (percent-decoded from a path). Which one is decided by the text's form alone.
class AlertRef {
 public:
  explicit AlertRef(std::string_view text) : text_(text) {}

  [[nodiscard]] const std::string& text() const noexcept { return text_; }
  [[nodiscard]] bool is_short() const noexcept;
  // Whether this text names `id`: its short form for a short reference, else its long form.
  [[nodiscard]] bool names(const AlertId& id) const;

 private:
  std::string text_;
};

// One run an alert names.
struct AlertRun {
  std::string external_id;
  Timestamp observed_at{};
  std::chrono::nanoseconds median{0};  // 0 for a failed run
};

struct Alert {
  AlertId id;
  KeyLabels key;
  AlertKind kind = AlertKind::Step;
  Direction direction = Direction::Regression;
  AlertState state = AlertState::Firing;
  AlertRun fired;                     // the run at which it fired
  AlertRun onset;                     // the first run at the new level (== fired unconfirmed)
  std::optional<AlertRun> closed_by;  // the run that resolved or superseded it
  Band band;                          // the band the onset breached
  std::size_t baseline_runs = 0;
  double relative_change = 0;  // (median - band centre) / centre; +0.05 = 5% slower
  std::vector<AttributionChange> attribution;
  std::string explanation;  // one line a person can read
  // An incident: its id on the incident and on each member; empty otherwise.
  AlertId incident;
  // An incident's member keys, each its key's step (kind Step; kind Environment in documents of
  // kernelwatch 0.2) with the reason the controls gave; empty for every other alert. An
  // incident's key names only its environment.
  std::vector<Alert> members;
  // An alert about a GPU or a host out of line with its siblings (kind Environment, no
  // members): which one. Empty for every other alert.
  Placement placement;
  // Such an alert's keys: those on which the GPU or host was out of line its way, in display
  // order, as the detectors decided it (`kernelwatch backtest` selects and prints it by them).
  // Not part of the one JSON form below (an alert read back from it has none). Empty for
  // every other alert.
  std::vector<KeyLabels> keys;
};

// An incident: an alert with member keys (kind Environment). A member: a key's step that is part
// of an incident (its `incident` names it; it has no members of its own).
[[nodiscard]] inline bool is_incident(const Alert& alert) {
  return !alert.members.empty();
}
[[nodiscard]] inline bool is_incident_member(const Alert& alert) {
  return !alert.incident.empty() && alert.members.empty();
}

// What an operator does to an open alert (API POST /api/v1/alerts/{id}/ack, `kernelwatch ack`):
// one type from the request to the stored action and the replay. "acknowledge" / "rebaseline".
enum class OperatorAction { Acknowledge, Rebaseline };
[[nodiscard]] std::string_view to_string(OperatorAction action) noexcept;
// nullopt for any other text.
[[nodiscard]] std::optional<OperatorAction> parse_operator_action(std::string_view text) noexcept;

// The alert's one JSON form:
// {"id","benchmark","provider","workload","environment","protocol","kind","direction","state",
//  "externalId","observedAt","median","onsetExternalId","onsetObservedAt","onsetMedian",
//  "closedBy" (null or {"externalId","observedAt","median"}),"band":{"lower","upper","center"},
//  "baselineRuns","relativeChange","attribution":[{"field","from","to"}],"explanation",
//  "incident" (null unless kind is environment),"members":[alerts]}. Durations in integer ns,
//  times RFC 3339 UTC.
[[nodiscard]] nlohmann::json to_json(const Alert& alert);
// Its inverse; ParseError naming the field ("members[0].band.lower: expected an integer"). Reads
// the documents kernelwatch 0.1 stored too (no protocol, closedBy or onsetMedian; failed alerts
// without band, onset and counts).
[[nodiscard]] Result<Alert> alert_from_json(const nlohmann::json& doc);
// The same for an alert inside a larger document, its messages with the alert's path in front.
[[nodiscard]] Result<Alert> alert_from_json(const JsonField& field);

}  // namespace kernelwatch::core
