#include "storage/alerts.hpp"

#include "storage/detail/database.hpp"

namespace kernelwatch::storage {
namespace {

Result<AlertRow> read_row(const Statement& s, const std::filesystem::path& path) {
  AlertRow row;
  row.id = s.column_text(0);
  row.key_id = s.column_int(1);
  row.kind = s.column_text(2);
  row.direction = s.column_text(3);
  row.state = s.column_text(4);
  row.fired_at = s.column_timestamp(5);
  row.updated_at = s.column_timestamp(6);
  row.document = nlohmann::json::parse(s.column_text(7), nullptr, false);
  if (!s.column_is_null(8))
    row.pending_notifications = nlohmann::json::parse(s.column_text(8), nullptr, false);
  row.notified_at = s.column_optional_timestamp(9);
  if (row.document.is_discarded() || row.pending_notifications.is_discarded()) {
    return core::fail(core::ErrorCode::NotADatabase,
                      path.string() + ": alert " + row.id + ": document is not JSON");
  }
  return row;
}

constexpr const char* kColumns =
    "id, key_id, kind, direction, state, fired_at_ns, updated_at_ns, document, "
    "pending_notifications, notified_at_ns";

Result<std::vector<AlertRow>> collect_alerts(const Database& db, Statement& stmt) {
  return collect(stmt, [&](const Statement& s) { return read_row(s, db.path()); });
}

}  // namespace

AlertStore::AlertStore(Connection& connection) : db_(&connection.database()) {}

Status AlertStore::upsert(Transaction& tx, const AlertRow& row) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  auto stmt = KW_TRY(db_->statement(
      "INSERT INTO alerts (id, key_id, kind, direction, state, fired_at_ns, updated_at_ns, "
      "document, pending_notifications, notified_at_ns) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
      "ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, direction = excluded.direction, "
      "state = excluded.state, updated_at_ns = excluded.updated_at_ns, "
      "document = excluded.document, pending_notifications = excluded.pending_notifications, "
      "notified_at_ns = excluded.notified_at_ns"));
  stmt->bind(1, row.id)
      .bind(2, row.key_id)
      .bind(3, row.kind)
      .bind(4, row.direction)
      .bind(5, row.state)
      .bind(6, row.fired_at)
      .bind(7, row.updated_at)
      .bind(8, row.document.dump())
      .bind(10, row.notified_at);
  if (row.pending_notifications.is_null()) {
    stmt->bind_null(9);
  } else {
    stmt->bind(9, row.pending_notifications.dump());
  }
  return stmt->run();
}

Status AlertStore::record_action(Transaction& tx, const AlertActionRow& row) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  auto stmt = KW_TRY(db_->statement(
      "INSERT INTO alert_actions (alert_id, key_id, action, at_ns) VALUES (?1, ?2, ?3, ?4)"));
  stmt->bind(1, row.alert_id)
      .bind(2, row.key_id)
      .bind(3,
            std::string_view(row.action == AlertAction::Acknowledge ? "acknowledge" : "rebaseline"))
      .bind(4, row.at);
  return stmt->run();
}

Result<std::vector<AlertRow>> AlertStore::list(std::string_view state, std::size_t limit) const {
  static const std::string sql =
      std::string("SELECT ") + kColumns +
      " FROM alerts WHERE (?1 = '' OR state = ?1) ORDER BY fired_at_ns DESC, id LIMIT ?2";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, state).bind_limit(2, limit);
  return collect_alerts(*db_, *stmt);
}

Result<std::vector<AlertRow>> AlertStore::with_pending_notifications() const {
  static const std::string sql = std::string("SELECT ") + kColumns +
                                 " FROM alerts WHERE pending_notifications IS NOT NULL "
                                 "ORDER BY fired_at_ns, id";
  auto stmt = KW_TRY(db_->statement(sql));
  return collect_alerts(*db_, *stmt);
}

Status AlertStore::clear_pending_notifications(Transaction& tx, core::Timestamp now) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  auto stmt =
      KW_TRY(db_->statement("UPDATE alerts SET pending_notifications = NULL, notified_at_ns = ?1 "
                            "WHERE pending_notifications IS NOT NULL"));
  stmt->bind(1, now);
  return stmt->run();
}

Result<std::vector<AlertRow>> AlertStore::firing_notified_before(core::Timestamp cutoff) const {
  static const std::string sql = std::string("SELECT ") + kColumns +
                                 " FROM alerts WHERE state = 'firing' AND notified_at_ns <= ?1 "
                                 "ORDER BY notified_at_ns, id";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, cutoff);
  return collect_alerts(*db_, *stmt);
}

Result<std::optional<core::Timestamp>> AlertStore::oldest_firing_notification() const {
  auto stmt =
      KW_TRY(db_->statement("SELECT min(notified_at_ns) FROM alerts WHERE state = 'firing'"));
  // min() over no rows is one NULL row.
  const auto oldest =
      KW_TRY(first_row(*stmt, [](const Statement& s) { return s.column_optional_timestamp(0); }));
  return oldest.value_or(std::nullopt);
}

Result<std::optional<AlertRow>> AlertStore::find(std::string_view id) const {
  static const std::string sql = std::string("SELECT ") + kColumns + " FROM alerts WHERE id = ?1";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, id);
  return first_row(*stmt, [&](const Statement& s) { return read_row(s, db_->path()); });
}

Result<std::vector<AlertActionRow>> AlertStore::actions() const {
  auto stmt = KW_TRY(db_->statement(
      "SELECT alert_id, key_id, action, at_ns FROM alert_actions ORDER BY at_ns, id"));
  return collect(*stmt, [](const Statement& s) {
    return AlertActionRow{
        s.column_text(0), s.column_int(1),
        s.column_text(2) == "acknowledge" ? AlertAction::Acknowledge : AlertAction::Rebaseline,
        s.column_timestamp(3)};
  });
}

Result<std::int64_t> AlertStore::count_by_state(std::string_view state) const {
  auto stmt = KW_TRY(db_->statement("SELECT count(*) FROM alerts WHERE state = ?1"));
  stmt->bind(1, state);
  const auto count = KW_TRY(first_row(*stmt, [](const Statement& s) { return s.column_int(0); }));
  return count.value_or(0);
}

}  // namespace kernelwatch::storage
