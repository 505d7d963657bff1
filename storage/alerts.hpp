// Alert state as the daemon serves it (one document per alert, its state and key), and the
// operator's actions on alerts. Written in the same transaction as the run that changed them.
// Plain C++ over core types; SQL stays in storage/alerts.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

struct AlertRow {
  std::string id;
  std::int64_t key_id = 0;
  std::string kind;       // "step", "drift", "environment", "failed"
  std::string direction;  // "regression", "improvement"
  std::string state;      // "firing", "acknowledged", "resolved", "rebaselined"
  core::Timestamp fired_at{};
  core::Timestamp updated_at{};
  nlohmann::json document = nlohmann::json::object();  // what the API answers
  // Notifications this alert still owes, oldest first (null when none): written in the
  // transaction of the run that changed the alert, cleared in the one that enqueues them.
  nlohmann::json pending_notifications = nullptr;
  // When the last notification of this alert was queued (wall clock); nullopt: never. Set by
  // clear_pending_notifications(); reminders are due repeat_interval after it.
  std::optional<core::Timestamp> notified_at;
};

enum class AlertAction { Acknowledge, Rebaseline };

struct AlertActionRow {
  std::string alert_id;
  std::int64_t key_id = 0;
  AlertAction action = AlertAction::Acknowledge;
  core::Timestamp at{};
};

// A peer of RunStore and Outbox on one Connection: use it on the thread that uses the
// connection.
class AlertStore {
 public:
  explicit AlertStore(Connection& connection);

  // Inserts or replaces the alert's row inside the caller's transaction.
  [[nodiscard]] Status upsert(Transaction& tx, const AlertRow& row);
  [[nodiscard]] Status record_action(Transaction& tx, const AlertActionRow& row);

  // Newest first; an empty state matches every state; limit 0 means all.
  [[nodiscard]] Result<std::vector<AlertRow>> list(std::string_view state, std::size_t limit) const;
  [[nodiscard]] Result<std::optional<AlertRow>> find(std::string_view id) const;
  // Every action, oldest first (the daemon replays them with the runs at start).
  [[nodiscard]] Result<std::vector<AlertActionRow>> actions() const;
  [[nodiscard]] Result<std::int64_t> count_by_state(std::string_view state) const;
  // Alerts with pending notifications, oldest first.
  [[nodiscard]] Result<std::vector<AlertRow>> with_pending_notifications() const;
  // The owed notifications were queued at `now`: clears them and stamps the alerts' notified_at.
  [[nodiscard]] Status clear_pending_notifications(Transaction& tx, core::Timestamp now);
  // Firing (unacknowledged) alerts whose last notification was queued at or before `cutoff`,
  // oldest notification first: the reminders due when cutoff = now - repeat_interval.
  [[nodiscard]] Result<std::vector<AlertRow>> firing_notified_before(core::Timestamp cutoff) const;
  // The oldest notified_at of the firing alerts (when the next reminder falls due); nullopt
  // when no firing alert was ever notified.
  [[nodiscard]] Result<std::optional<core::Timestamp>> oldest_firing_notification() const;

 private:
  Database* db_;
};

}  // namespace kernelwatch::storage
