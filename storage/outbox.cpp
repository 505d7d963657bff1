#include "storage/outbox.hpp"

#include <nlohmann/json.hpp>

#include "storage/detail/database.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

std::int64_t to_ns(core::Timestamp t) {
  return t.time_since_epoch().count();
}

core::Timestamp from_ns(std::int64_t ns) {
  return core::Timestamp(std::chrono::nanoseconds(ns));
}

OutboxState parse_state(std::string_view text) {
  if (text == "delivered") return OutboxState::Delivered;
  if (text == "dead") return OutboxState::Dead;
  return OutboxState::Pending;
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
  row.created_at = from_ns(stmt.column_int(4));
  row.state = parse_state(stmt.column_text(5));
  row.next_attempt_at = from_ns(stmt.column_int(6));
  row.attempts = stmt.column_int(7);
  row.last_error = stmt.column_text(8);
  if (auto finished = stmt.column_optional_int(9)) row.finished_at = from_ns(*finished);
  return row;
}

Result<std::vector<OutboxRow>> read_rows(Database& db, Statement& stmt) {
  std::vector<OutboxRow> rows;
  while (true) {
    auto more = stmt.step();
    if (!more) return tl::unexpected(more.error().with_context(db.path().string()));
    if (!*more) break;
    rows.push_back(read_row(stmt));
  }
  stmt.reset();
  return rows;
}

// The statements are built once (prepare_cached keys on the pointer).
// INDEXED BY: on a young table the planner may pick outbox_next and sort; queue order must
// come from walking outbox_due.
const std::string kClaimSql = std::string("SELECT ") + kRowColumns +
                              "INDEXED BY outbox_due WHERE state = 'pending' AND "
                              "destination = ?1 AND "
                              "next_attempt_at_ns <= ?2 ORDER BY id LIMIT ?3";
const std::string kDeadSql = std::string("SELECT ") + kRowColumns +
                             "WHERE state = 'dead' ORDER BY finished_at_ns DESC, id DESC LIMIT ?1";
const std::string kFindSql = std::string("SELECT ") + kRowColumns + "WHERE id = ?1";

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

Result<EnqueueOutcome> Outbox::enqueue(SqliteStore::Transaction& tx, const NewOutboxRow& row) {
  KW_ASSERT(tx.db_ == store_->db_.get(), "the transaction belongs to this outbox's store");
  if (row.destination.empty() || row.idempotency_key.empty()) {
    return core::fail(ErrorCode::InvalidArgument,
                      "outbox row needs a destination and an idempotency key");
  }
  Database& db = *store_->db_;
  auto stmt = db.prepare_cached(
      "INSERT INTO outbox (destination, idempotency_key, payload, created_at_ns, "
      "next_attempt_at_ns) VALUES (?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT (destination, idempotency_key) DO NOTHING");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)
      ->bind(1, row.destination)
      .bind(2, row.idempotency_key)
      .bind(3, row.payload)
      .bind(4, to_ns(row.created_at))
      .bind(5, to_ns(row.not_before.value_or(row.created_at)));
  if (auto ok = (*stmt)->run(); !ok) {
    return tl::unexpected(ok.error().with_context(db.path().string() + ": outbox"));
  }
  return db.changes() == 0 ? EnqueueOutcome::Duplicate : EnqueueOutcome::Inserted;
}

Result<std::vector<OutboxRow>> Outbox::claim_due(std::string_view destination, core::Timestamp now,
                                                 std::size_t limit) {
  Database& db = *store_->db_;
  auto stmt = db.prepare_cached(kClaimSql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, destination).bind(2, to_ns(now)).bind(3, static_cast<std::int64_t>(limit));
  return read_rows(db, **stmt);
}

Result<std::optional<core::Timestamp>> Outbox::next_due(std::string_view destination) {
  Database& db = *store_->db_;
  auto stmt = db.prepare_cached(
      "SELECT next_attempt_at_ns FROM outbox WHERE state = 'pending' AND destination = ?1 "
      "ORDER BY next_attempt_at_ns LIMIT 1");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, destination);
  auto row = (*stmt)->step();
  if (!row) return tl::unexpected(row.error().with_context(db.path().string()));
  std::optional<core::Timestamp> due;
  if (*row) due = from_ns((*stmt)->column_int(0));
  (*stmt)->reset();
  return due;
}

Status Outbox::apply(const OutboxUpdate& update) {
  Database& db = *store_->db_;
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
  auto stmt = db.prepare_cached(sql);
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, update.id).bind(2, to_ns(update.at)).bind(3, update.message);
  if (auto ok = (*stmt)->run(); !ok) {
    return tl::unexpected(
        ok.error().with_context(db.path().string() + ": outbox row " + std::to_string(update.id)));
  }
  if (db.changes() == 0) {
    return core::fail(ErrorCode::NotFound, db.path().string() + ": outbox row " +
                                               std::to_string(update.id) + " is not pending");
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
  auto tx = store_->begin();  // rolls back on every early return
  if (!tx) return tl::unexpected(tx.error());
  for (const auto& update : updates) {
    // A row that is no longer pending (marked by an earlier run) is not an error here.
    if (auto ok = apply(update); !ok && ok.error().code != ErrorCode::NotFound) return ok;
  }
  return tx->commit();
}

Result<std::vector<OutboxCounts>> Outbox::counts() {
  Database& db = *store_->db_;
  auto stmt = db.prepare_cached(
      "SELECT destination, sum(state = 'pending'), sum(state = 'delivered'), "
      "sum(state = 'dead'), min(CASE WHEN state = 'pending' THEN created_at_ns END) "
      "FROM outbox GROUP BY destination ORDER BY destination");
  if (!stmt) return tl::unexpected(stmt.error());
  std::vector<OutboxCounts> out;
  while (true) {
    auto more = (*stmt)->step();
    if (!more) return tl::unexpected(more.error().with_context(db.path().string()));
    if (!*more) break;
    OutboxCounts c;
    c.destination = (*stmt)->column_text(0);
    c.pending = (*stmt)->column_int(1);
    c.delivered = (*stmt)->column_int(2);
    c.dead = (*stmt)->column_int(3);
    if (auto oldest = (*stmt)->column_optional_int(4)) c.oldest_pending = from_ns(*oldest);
    out.push_back(std::move(c));
  }
  (*stmt)->reset();
  return out;
}

Result<std::vector<OutboxRow>> Outbox::dead_letters(std::size_t limit) {
  Database& db = *store_->db_;
  auto stmt = db.prepare_cached(kDeadSql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
  return read_rows(db, **stmt);
}

Result<std::optional<OutboxRow>> Outbox::find(std::int64_t id) {
  Database& db = *store_->db_;
  auto stmt = db.prepare_cached(kFindSql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, id);
  auto rows = read_rows(db, **stmt);
  if (!rows) return tl::unexpected(rows.error());
  if (rows->empty()) return std::optional<OutboxRow>();
  return std::optional<OutboxRow>(std::move(rows->front()));
}

Result<std::int64_t> Outbox::prune_delivered(core::Timestamp before) {
  Database& db = *store_->db_;
  auto stmt =
      db.prepare_cached("DELETE FROM outbox WHERE state = 'delivered' AND finished_at_ns < ?1");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, to_ns(before));
  if (auto ok = (*stmt)->run(); !ok) {
    return tl::unexpected(ok.error().with_context(db.path().string() + ": outbox prune"));
  }
  return db.changes();
}

Result<std::int64_t> Outbox::abandon_destinations_except(const std::vector<std::string>& configured,
                                                         core::Timestamp at) {
  Database& db = *store_->db_;
  // The configured names as a JSON array: one statement whatever their number.
  const std::string names = nlohmann::json(configured).dump();
  auto stmt = db.prepare_cached(
      "UPDATE outbox SET state = 'dead', finished_at_ns = ?2, "
      "last_error = 'destination removed from the configuration' "
      "WHERE state = 'pending' AND destination NOT IN (SELECT value FROM json_each(?1))");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, names).bind(2, to_ns(at));
  if (auto ok = (*stmt)->run(); !ok) {
    return tl::unexpected(ok.error().with_context(db.path().string() + ": outbox"));
  }
  return db.changes();
}

}  // namespace kernelwatch::storage
