#include "storage/outbox.hpp"

#include <nlohmann/json.hpp>

#include "core/names.hpp"
#include "storage/detail/database.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

// The schema's CHECK allows only these names; an unknown one reads as pending (retried).
OutboxState parse_state(std::string_view text) {
  static constexpr OutboxState kValues[] = {OutboxState::Pending, OutboxState::Delivered,
                                            OutboxState::Dead};
  return core::parse_name("outbox state", text, kValues).value_or(OutboxState::Pending);
}

constexpr const char* kRowColumns =
    "id, destination, idempotency_key, payload, created_at_ns, state, next_attempt_at_ns, "
    "attempts, last_error, finished_at_ns FROM outbox ";

OutboxRow read_row(const Statement& stmt) {
  OutboxRow row;
  row.id = stmt.column_int(0);
  row.destination = stmt.column_text(1);
  row.idempotency_key = stmt.column_text(2);
  row.payload = stmt.column_text(3);
  row.created_at = stmt.column_timestamp(4);
  row.state = parse_state(stmt.column_text(5));
  row.next_attempt_at = stmt.column_timestamp(6);
  row.attempts = stmt.column_int(7);
  row.last_error = stmt.column_text(8);
  row.finished_at = stmt.column_optional_timestamp(9);
  return row;
}

// INDEXED BY: on a young table the planner may pick outbox_next and sort; queue order must
// come from walking outbox_due.
const std::string kClaimSql = std::string("SELECT ") + kRowColumns +
                              "INDEXED BY outbox_due WHERE state = 'pending' AND "
                              "destination = ?1 AND "
                              "next_attempt_at_ns <= ?2 ORDER BY id LIMIT ?3";
const std::string kDeadSql = std::string("SELECT ") + kRowColumns +
                             "WHERE state = 'dead' ORDER BY finished_at_ns DESC, id DESC LIMIT ?1";
const std::string kFindSql = std::string("SELECT ") + kRowColumns + "WHERE id = ?1";
// The alert's id as a JSON string inside the payload (a notification lists its alerts by id).
const std::string kMentioningSql =
    std::string("SELECT ") + kRowColumns + "WHERE instr(payload, ?1) > 0 ORDER BY id LIMIT ?2";

}  // namespace

std::string_view to_string(OutboxState state) noexcept {
  switch (state) {
    case OutboxState::Pending:
      return "pending";
    case OutboxState::Delivered:
      return "delivered";
    case OutboxState::Dead:
      return "dead";
  }
  return "pending";
}

Outbox::Outbox(Connection& connection) : connection_(&connection) {}

Result<EnqueueOutcome> Outbox::enqueue(Transaction& tx, const NewOutboxRow& row) {
  Database& db = connection_->database();
  KW_ASSERT(tx.is_open_on(db), "the transaction is open on this outbox's connection");
  if (row.destination.empty() || row.idempotency_key.empty()) {
    return core::fail(ErrorCode::InvalidArgument,
                      "outbox row needs a destination and an idempotency key");
  }
  auto stmt = KW_TRY(
      db.statement("INSERT INTO outbox (destination, idempotency_key, payload, created_at_ns, "
                   "next_attempt_at_ns) VALUES (?1, ?2, ?3, ?4, ?5) "
                   "ON CONFLICT (destination, idempotency_key) DO NOTHING"));
  stmt->bind(1, row.destination)
      .bind(2, row.idempotency_key)
      .bind(3, row.payload)
      .bind(4, row.created_at)
      .bind(5, row.not_before.value_or(row.created_at));
  KW_TRY(stmt->run());
  return db.changes() == 0 ? EnqueueOutcome::Duplicate : EnqueueOutcome::Inserted;
}

Result<std::vector<OutboxRow>> Outbox::claim_due(std::string_view destination, core::Timestamp now,
                                                 std::size_t limit) {
  auto stmt = KW_TRY(connection_->database().statement(kClaimSql));
  stmt->bind(1, destination).bind(2, now).bind(3, static_cast<std::int64_t>(limit));
  return collect(*stmt, read_row);
}

Result<std::optional<core::Timestamp>> Outbox::next_due(std::string_view destination) {
  auto stmt = KW_TRY(connection_->database().statement(
      "SELECT next_attempt_at_ns FROM outbox WHERE state = 'pending' AND destination = ?1 "
      "ORDER BY next_attempt_at_ns LIMIT 1"));
  stmt->bind(1, destination);
  return first_row(*stmt, [](const Statement& s) { return s.column_timestamp(0); });
}

Result<std::optional<std::string>> Outbox::delivered_to_any(
    std::string_view idempotency_key, const std::vector<std::string>& destinations) {
  // The names as a JSON array (as abandon_destinations_except); the UNIQUE (destination,
  // idempotency_key) index finds each pair.
  auto stmt = KW_TRY(connection_->database().statement(
      "SELECT names.value FROM json_each(?2) AS names JOIN outbox ON outbox.destination = "
      "names.value AND outbox.idempotency_key = ?1 WHERE outbox.state = 'delivered' "
      "ORDER BY names.key LIMIT 1"));
  stmt->bind(1, idempotency_key).bind(2, nlohmann::json(destinations).dump());
  return first_row(*stmt, [](const Statement& s) { return s.column_text(0); });
}

Status Outbox::apply(const OutboxUpdate& update) {
  Database& db = connection_->database();
  const char* sql = nullptr;
  switch (update.kind) {
    case OutboxUpdate::Kind::Delivered:
      sql =
          "UPDATE outbox SET state = 'delivered', attempts = attempts + 1, finished_at_ns = ?2, "
          "last_error = ?3 WHERE id = ?1 AND state = 'pending'";
      break;
    case OutboxUpdate::Kind::RetryAt:
      sql =
          "UPDATE outbox SET attempts = attempts + 1, next_attempt_at_ns = ?2, last_error = ?3 "
          "WHERE id = ?1 AND state = 'pending'";
      break;
    case OutboxUpdate::Kind::Dead:
      sql =
          "UPDATE outbox SET state = 'dead', attempts = attempts + 1, finished_at_ns = ?2, "
          "last_error = ?3 WHERE id = ?1 AND state = 'pending'";
      break;
  }
  const std::string row = "outbox row " + std::to_string(update.id);
  auto stmt = KW_TRY(db.statement(sql));
  stmt->bind(1, update.id).bind(2, update.at).bind(3, update.message);
  KW_TRY(stmt->run().map_error([&](const core::Error& e) { return e.with_context(row); }));
  if (db.changes() == 0) {
    return core::fail(ErrorCode::NotFound, db.path().string() + ": " + row + " is not pending");
  }
  return {};
}

Status Outbox::mark_delivered(std::int64_t id, core::Timestamp at) {
  return apply(OutboxUpdate{id, OutboxUpdate::Kind::Delivered, at, {}});
}

Status Outbox::mark_retry(std::int64_t id, core::Timestamp next_attempt_at,
                          std::string_view error) {
  return apply(OutboxUpdate{id, OutboxUpdate::Kind::RetryAt, next_attempt_at, std::string(error)});
}

Status Outbox::mark_dead(std::int64_t id, core::Timestamp at, std::string_view reason) {
  return apply(OutboxUpdate{id, OutboxUpdate::Kind::Dead, at, std::string(reason)});
}

Status Outbox::record(std::span<const OutboxUpdate> updates) {
  if (updates.empty()) return {};
  auto tx = KW_TRY(connection_->begin());  // rolls back on every early return
  for (const auto& update : updates) {
    // A row that is no longer pending (marked by an earlier run) is not an error here.
    if (auto ok = apply(update); !ok && ok.error().code != ErrorCode::NotFound) return ok;
  }
  return tx.commit();
}

Result<std::vector<OutboxCounts>> Outbox::counts() {
  auto stmt = KW_TRY(connection_->database().statement(
      "SELECT destination, count(CASE WHEN state = 'pending' THEN 1 END), "
      "count(CASE WHEN state = 'delivered' THEN 1 END), count(CASE WHEN state = 'dead' THEN 1 "
      "END), "
      "min(CASE WHEN state = 'pending' THEN created_at_ns END) "
      "FROM outbox GROUP BY destination ORDER BY destination"));
  return collect(*stmt, [](const Statement& s) {
    return OutboxCounts{s.column_text(0), s.column_int(1), s.column_int(2), s.column_int(3),
                        s.column_optional_timestamp(4)};
  });
}

Result<std::vector<OutboxRow>> Outbox::dead_letters(std::size_t limit) {
  auto stmt = KW_TRY(connection_->database().statement(kDeadSql));
  stmt->bind_limit(1, limit);
  return collect(*stmt, read_row);
}

Result<std::vector<OutboxRow>> Outbox::for_alert(const core::AlertId& alert_id, std::size_t limit) {
  auto stmt = KW_TRY(connection_->database().statement(kMentioningSql));
  stmt->bind(1, nlohmann::json(alert_id.long_form()).dump()).bind_limit(2, limit);
  return collect(*stmt, read_row);
}

Result<std::optional<OutboxRow>> Outbox::find(std::int64_t id) {
  auto stmt = KW_TRY(connection_->database().statement(kFindSql));
  stmt->bind(1, id);
  return first_row(*stmt, read_row);
}

Result<std::int64_t> Outbox::prune_delivered(core::Timestamp before) {
  Database& db = connection_->database();
  auto stmt =
      KW_TRY(db.statement("DELETE FROM outbox WHERE state = 'delivered' AND finished_at_ns < ?1"));
  stmt->bind(1, before);
  KW_TRY(stmt->run());
  return db.changes();
}

Result<std::int64_t> Outbox::abandon_destinations_except(const std::vector<std::string>& configured,
                                                         core::Timestamp at) {
  Database& db = connection_->database();
  // The configured names as a JSON array: one statement whatever their number.
  const std::string names = nlohmann::json(configured).dump();
  auto stmt = KW_TRY(db.statement(
      "UPDATE outbox SET state = 'dead', finished_at_ns = ?2, "
      "last_error = 'destination removed from the configuration' "
      "WHERE state = 'pending' AND destination NOT IN (SELECT value FROM json_each(?1))"));
  stmt->bind(1, names).bind(2, at);
  KW_TRY(stmt->run());
  return db.changes();
}

}  // namespace kernelwatch::storage
