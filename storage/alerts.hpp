// Alerts as the daemon keeps them (one typed row per alert or environment incident: the alert in
// its one JSON form, its state, and what its last notification said and when), and the
// operator's actions on alerts. Written in the transaction of what changed them.
// Plain C++ over core types; SQL stays in storage/alerts.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

// Where an alert came from: this daemon judged its run live (notified, reminded, resolved), or
// the replay of imported history implies it (listed and acknowledgeable, never notified).
enum class AlertOrigin { Daemon, History };
[[nodiscard]] std::string_view to_string(AlertOrigin origin);

struct AlertRow {
  core::Alert alert;                     // id, key labels, kind, direction, state, runs, band...
  std::optional<std::int64_t> key_id;    // the key's row; nullopt for an environment incident
  core::Timestamp updated_at{};          // wall clock of the last change
  std::optional<core::Notice> notified;  // what the last notification said; nullopt: none
  std::optional<core::Timestamp> notified_at;  // when it was queued (wall clock)
  AlertOrigin origin = AlertOrigin::Daemon;    // kept as first stored: an update never changes it
};

struct AlertActionRow {
  core::AlertId alert_id;
  std::int64_t key_id = 0;  // 0: an incident's (stored as NULL)
  core::OperatorAction action = core::OperatorAction::Acknowledge;
  core::Timestamp at{};
};

// A peer of RunStore and Outbox on one Connection: use it on the thread that uses the
// connection.
class AlertStore {
 public:
  explicit AlertStore(Connection& connection);

  // Inserts or replaces the row inside the caller's transaction (the notification columns are
  // kept as written: pass the row as read to keep them).
  [[nodiscard]] Status upsert(Transaction& tx, const AlertRow& row);
  [[nodiscard]] Status record_action(Transaction& tx, const AlertActionRow& row);
  // Removes an alert of imported history (origin history) that a replay no longer implies
  // (history or the detector settings changed); the daemon's own rows are never removed.
  [[nodiscard]] Status remove_history(Transaction& tx, const core::AlertId& id);
  // The alert was announced: `notice` queued at `at`.
  [[nodiscard]] Status mark_notified(Transaction& tx, const core::AlertId& id, core::Notice notice,
                                     core::Timestamp at);

  // Newest first; nullopt matches every state; limit 0 means all.
  [[nodiscard]] Result<std::vector<AlertRow>> list(std::optional<core::AlertState> state,
                                                   std::size_t limit) const;
  [[nodiscard]] Result<std::optional<AlertRow>> find(const core::AlertId& id) const;
  // The alert a person named by its short or long form; nullopt when none.
  [[nodiscard]] Result<std::optional<AlertRow>> find(const core::AlertRef& ref) const;
  // Open alerts (firing or acknowledged) whose last notification announced them firing, oldest
  // first: what Alertmanager must keep active (the notifiers re-send them).
  [[nodiscard]] Result<std::vector<AlertRow>> announced_open() const;
  // Every action, oldest first (the daemon replays them with the runs at start).
  [[nodiscard]] Result<std::vector<AlertActionRow>> actions() const;
  [[nodiscard]] Result<std::int64_t> count_by_state(core::AlertState state) const;
  // The rows a notification may be due for, oldest first (the daemon's own, never history's):
  // never announced, resolved but
  // announced only as firing, or firing and last announced at or before `reminder_cutoff`
  // (now - repeat_interval). detectors::notice_due() decides.
  [[nodiscard]] Result<std::vector<AlertRow>> notification_candidates(
      core::Timestamp reminder_cutoff) const;
  // The oldest notified_at of the firing alerts (when the next reminder falls due); nullopt
  // when none was announced.
  [[nodiscard]] Result<std::optional<core::Timestamp>> oldest_firing_notification() const;
  // The open alerts (firing or acknowledged), newest first, of another host's schema of a
  // fleet's PostgreSQL database (`schema`: its name, quoted here), read on this connection
  // (storage/fleet.hpp).
  [[nodiscard]] Result<std::vector<AlertRow>> open_in_schema(std::string_view schema,
                                                             std::size_t limit) const;

 private:
  Database* db_;
};

}  // namespace kernelwatch::storage
