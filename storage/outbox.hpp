// The notification outbox: rows written in the alert-state transaction, delivered by the
// notifiers' worker, marked delivered / retry-at / dead. Plain C++ over core types; SQL stays in
// storage/outbox.cpp. No clock inside: every timestamp is passed in, so schedules are testable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "core/error.hpp"
#include "core/time.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

enum class OutboxState { Pending, Delivered, Dead };

[[nodiscard]] std::string_view to_string(OutboxState state) noexcept;

// What the daemon enqueues: one row per (notification, destination). The payload is the
// destination-agnostic notification text (JSON); the worker formats it per destination.
struct NewOutboxRow {
  std::string destination;      // the destination's configured name
  std::string idempotency_key;  // stable across retries and restarts
  std::string payload;
  core::Timestamp created_at{};
  std::optional<core::Timestamp> not_before;  // first attempt; default created_at
};

struct OutboxRow {
  std::int64_t id = 0;
  std::string destination;
  std::string idempotency_key;
  std::string payload;
  core::Timestamp created_at{};
  OutboxState state = OutboxState::Pending;
  core::Timestamp next_attempt_at{};
  std::int64_t attempts = 0;                   // finished attempts (delivered, failed or given up)
  std::string last_error;                      // retry error or dead-letter reason; "" when none
  std::optional<core::Timestamp> finished_at;  // delivered or dead
};

enum class EnqueueOutcome { Inserted, Duplicate };

// The result of one delivery attempt, recorded in bulk by Outbox::record().
struct OutboxUpdate {
  enum class Kind { Delivered, RetryAt, Dead };
  std::int64_t id = 0;
  Kind kind = Kind::Delivered;
  core::Timestamp at{};  // Delivered/Dead: when; RetryAt: the next attempt
  std::string message;   // RetryAt: the error; Dead: the reason
};

struct OutboxCounts {
  std::string destination;
  std::int64_t pending = 0;
  std::int64_t delivered = 0;
  std::int64_t dead = 0;
  std::optional<core::Timestamp> oldest_pending;  // created_at of the oldest pending row
};

// A peer of RunStore and AlertStore on one Connection: use it on the thread that uses the
// connection, and never while a Transaction of the connection is open unless the call takes it.
class Outbox {
 public:
  explicit Outbox(Connection& connection);

  // Inside the caller's transaction, so alert state and its notifications commit together. The
  // same (destination, idempotency_key) twice is a Duplicate and changes nothing.
  [[nodiscard]] Result<EnqueueOutcome> enqueue(Transaction& tx, const NewOutboxRow& row);

  // Pending rows of one destination due at `now` (next_attempt_at <= now), in queue (insertion)
  // order, so a retried head row stays at the head. Reading
  // claims them for the single worker that owns the destination; nothing is leased, so rows a
  // crashed worker was sending are simply due again (delivery is at least once).
  [[nodiscard]] Result<std::vector<OutboxRow>> claim_due(std::string_view destination,
                                                         core::Timestamp now, std::size_t limit);
  // When the destination's next pending row is due; nullopt when nothing is pending.
  [[nodiscard]] Result<std::optional<core::Timestamp>> next_due(std::string_view destination);

  // Which of `destinations` (the first in their order) has this notification delivered; nullopt
  // when none has. The peers of an Alertmanager cluster ask it of each other.
  [[nodiscard]] Result<std::optional<std::string>> delivered_to_any(
      std::string_view idempotency_key, const std::vector<std::string>& destinations);

  [[nodiscard]] Status mark_delivered(std::int64_t id, core::Timestamp at);
  [[nodiscard]] Status mark_retry(std::int64_t id, core::Timestamp next_attempt_at,
                                  std::string_view error);
  [[nodiscard]] Status mark_dead(std::int64_t id, core::Timestamp at, std::string_view reason);
  // Several outcomes in one transaction (one fsync instead of one per row).
  [[nodiscard]] Status record(std::span<const OutboxUpdate> updates);

  // Per destination, sorted by name; destinations with no rows are absent.
  [[nodiscard]] Result<std::vector<OutboxCounts>> counts();
  // Dead letters, newest first; limit 0 means all.
  [[nodiscard]] Result<std::vector<OutboxRow>> dead_letters(std::size_t limit);
  // The rows whose notification names this alert id, oldest first; limit 0 means all. A scan
  // of the outbox (delivered rows are pruned): for the dashboard's alert page, not a hot path.
  [[nodiscard]] Result<std::vector<OutboxRow>> for_alert(const core::AlertId& alert_id,
                                                         std::size_t limit);
  [[nodiscard]] Result<std::optional<OutboxRow>> find(std::int64_t id);
  // Deletes delivered rows finished before `before`; returns how many.
  [[nodiscard]] Result<std::int64_t> prune_delivered(core::Timestamp before);
  // Pending rows of destinations no longer configured become dead letters with that reason
  // (visible to the status API) instead of waiting forever; returns how many.
  [[nodiscard]] Result<std::int64_t> abandon_destinations_except(
      const std::vector<std::string>& configured, core::Timestamp at);

 private:
  Status apply(const OutboxUpdate& update);
  Connection* connection_;  // record() begins its own transaction
};

}  // namespace kernelwatch::storage
