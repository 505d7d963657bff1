#include "storage/alerts.hpp"

#include "core/names.hpp"
#include "storage/detail/database.hpp"

namespace kernelwatch::storage {
namespace {

Result<AlertOrigin> parse_origin(std::string_view text) {
  static constexpr AlertOrigin kValues[] = {AlertOrigin::Daemon, AlertOrigin::History};
  return core::parse_name("alert origin", text, kValues);
}

constexpr const char* kColumns =
    "id, key_id, state, updated_at_ns, document, notified, notified_at_ns, origin";

// The document is the alert's one JSON form; the typed columns are authoritative for what they
// hold (the state changes without the document being rewritten by an older version).
Result<AlertRow> read_row(const Statement& s, const std::filesystem::path& path) {
  const std::string id = s.column_text(0);
  const auto where = [&] { return path.string() + ": alert " + id; };
  AlertRow row;
  row.alert = KW_TRY_WITH(
      core::alert_from_json(nlohmann::json::parse(s.column_text(4), nullptr, false)), where());
  row.alert.id = core::AlertId(id);
  if (!s.column_is_null(1)) row.key_id = s.column_int(1);
  row.alert.state = KW_TRY_WITH(core::parse_alert_state(s.column_text(2)), where());
  row.updated_at = s.column_timestamp(3);
  if (!s.column_is_null(5)) {
    row.notified = KW_TRY_WITH(core::parse_notice(s.column_text(5)), where());
  }
  row.notified_at = s.column_optional_timestamp(6);
  // The schema allows only these names; kernelwatch 0.2's rows have no origin: the daemon's.
  row.origin = parse_origin(s.column_text(7)).value_or(AlertOrigin::Daemon);
  return row;
}

Result<std::vector<AlertRow>> collect_alerts(const Database& db, Statement& stmt) {
  return collect(stmt, [&](const Statement& s) { return read_row(s, db.path()); });
}

}  // namespace

std::string_view to_string(AlertOrigin origin) {
  return origin == AlertOrigin::History ? "history" : "daemon";
}

AlertStore::AlertStore(Connection& connection) : db_(&connection.database()) {}

Status AlertStore::upsert(Transaction& tx, const AlertRow& row) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  const core::Alert& a = row.alert;
  auto stmt = KW_TRY(db_->statement(
      "INSERT INTO alerts (id, key_id, kind, direction, state, fired_at_ns, updated_at_ns, "
      "document, notified, notified_at_ns, origin) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
      "ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, direction = excluded.direction, "
      "state = excluded.state, updated_at_ns = excluded.updated_at_ns, "
      "document = excluded.document, notified = excluded.notified, "
      "notified_at_ns = excluded.notified_at_ns"));
  stmt->bind(1, a.id.long_form())
      .bind(2, row.key_id)
      .bind(3, core::to_string(a.kind))
      .bind(4, core::to_string(a.direction))
      .bind(5, core::to_string(a.state))
      .bind(6, a.fired.observed_at)
      .bind(7, row.updated_at)
      .bind(8, core::to_json(a).dump())
      .bind(10, row.notified_at)
      .bind(11, to_string(row.origin));
  if (row.notified) {
    stmt->bind(9, core::to_string(*row.notified));
  } else {
    stmt->bind_null(9);
  }
  return stmt->run();
}

Status AlertStore::record_action(Transaction& tx, const AlertActionRow& row) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  auto stmt = KW_TRY(db_->statement(
      "INSERT INTO alert_actions (alert_id, key_id, action, at_ns) VALUES (?1, ?2, ?3, ?4)"));
  stmt->bind(1, row.alert_id.long_form()).bind(3, core::to_string(row.action)).bind(4, row.at);
  if (row.key_id == 0) {
    stmt->bind_null(2);  // an incident: it has no key
  } else {
    stmt->bind(2, row.key_id);
  }
  return stmt->run();
}

Status AlertStore::remove_history(Transaction& tx, const core::AlertId& id) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  auto stmt = KW_TRY(db_->statement("DELETE FROM alerts WHERE id = ?1 AND origin = 'history'"));
  stmt->bind(1, id.long_form());
  return stmt->run();
}

Status AlertStore::mark_notified(Transaction& tx, const core::AlertId& id, core::Notice notice,
                                 core::Timestamp at) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  auto stmt =
      KW_TRY(db_->statement("UPDATE alerts SET notified = ?2, notified_at_ns = ?3 WHERE id = ?1"));
  stmt->bind(1, id.long_form()).bind(2, core::to_string(notice)).bind(3, at);
  return stmt->run();
}

Result<std::vector<AlertRow>> AlertStore::list(std::optional<core::AlertState> state,
                                               std::size_t limit) const {
  static const std::string sql =
      std::string("SELECT ") + kColumns +
      " FROM alerts WHERE (?1 = '' OR state = ?1) ORDER BY fired_at_ns DESC, id LIMIT ?2";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, state ? core::to_string(*state) : std::string_view("")).bind_limit(2, limit);
  return collect_alerts(*db_, *stmt);
}

Result<std::vector<AlertRow>> AlertStore::open_in_schema(std::string_view schema,
                                                         std::size_t limit) const {
  const std::string sql = std::string("SELECT ") + kColumns + " FROM " + quoted_identifier(schema) +
                          ".alerts WHERE state IN ('firing', 'acknowledged') "
                          "ORDER BY fired_at_ns DESC, id LIMIT ?1";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind_limit(1, limit);
  return collect_alerts(*db_, *stmt);
}

Result<std::vector<AlertRow>> AlertStore::notification_candidates(
    core::Timestamp reminder_cutoff) const {
  static const std::string sql =
      std::string("SELECT ") + kColumns +
      " FROM alerts WHERE origin = 'daemon' AND (notified IS NULL "
      "OR (state = 'resolved' AND notified = 'firing') "
      "OR (state = 'firing' AND notified_at_ns <= ?1)) ORDER BY fired_at_ns, id";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, reminder_cutoff);
  return collect_alerts(*db_, *stmt);
}

Result<std::optional<core::Timestamp>> AlertStore::oldest_firing_notification() const {
  auto stmt = KW_TRY(db_->statement(
      "SELECT min(notified_at_ns) FROM alerts WHERE state = 'firing' AND notified = 'firing'"));
  auto row =
      KW_TRY(first_row(*stmt, [](const Statement& s) { return s.column_optional_timestamp(0); }));
  return row ? *row : std::nullopt;
}

Result<std::optional<AlertRow>> AlertStore::find(const core::AlertId& id) const {
  static const std::string sql = std::string("SELECT ") + kColumns + " FROM alerts WHERE id = ?1";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, id.long_form());
  return first_row(*stmt, [&](const Statement& s) { return read_row(s, db_->path()); });
}

Result<std::optional<AlertRow>> AlertStore::find(const core::AlertRef& ref) const {
  if (!ref.is_short()) return find(core::AlertId(ref.text()));
  // The short form is derived, not stored: an operator's ack is rare, hashing every id is cheap.
  auto stmt = KW_TRY(db_->statement("SELECT id FROM alerts"));
  const auto ids =
      KW_TRY(collect(*stmt, [](const Statement& s) { return core::AlertId(s.column_text(0)); }));
  for (const auto& id : ids) {
    if (ref.names(id)) return find(id);
  }
  return std::optional<AlertRow>{};
}

Result<std::vector<AlertRow>> AlertStore::announced_open() const {
  static const std::string sql = std::string("SELECT ") + kColumns +
                                 " FROM alerts WHERE state IN ('firing', 'acknowledged') AND "
                                 "notified = 'firing' ORDER BY fired_at_ns, id";
  auto stmt = KW_TRY(db_->statement(sql));
  return collect_alerts(*db_, *stmt);
}

Result<std::vector<AlertActionRow>> AlertStore::actions() const {
  auto stmt = KW_TRY(db_->statement(
      "SELECT alert_id, key_id, action, at_ns FROM alert_actions ORDER BY at_ns, id"));
  return collect(*stmt, [](const Statement& s) {
    return AlertActionRow{
        core::AlertId(s.column_text(0)), s.column_int(1),  // NULL (an incident's) reads as 0
        // The table's CHECK admits the two names only.
        core::parse_operator_action(s.column_text(2)).value_or(core::OperatorAction::Rebaseline),
        s.column_timestamp(3)};
  });
}

Result<std::int64_t> AlertStore::count_by_state(core::AlertState state) const {
  auto stmt = KW_TRY(db_->statement("SELECT count(*) FROM alerts WHERE state = ?1"));
  stmt->bind(1, core::to_string(state));
  auto count = KW_TRY(first_row(*stmt, [](const Statement& s) { return s.column_int(0); }));
  return count.value_or(0);
}

}  // namespace kernelwatch::storage
