#include "storage/alerts.hpp"

#include "storage/detail/database.hpp"

namespace kernelwatch::storage {
namespace {

std::int64_t ns(core::Timestamp t) {
  return static_cast<std::int64_t>(t.time_since_epoch().count());
}
core::Timestamp at(std::int64_t value) {
  return core::Timestamp{std::chrono::nanoseconds{value}};
}

Result<AlertRow> read_row(const Statement& s, const std::filesystem::path& path) {
  AlertRow row;
  row.id = s.column_text(0);
  row.key_id = s.column_int(1);
  row.kind = s.column_text(2);
  row.direction = s.column_text(3);
  row.state = s.column_text(4);
  row.fired_at = at(s.column_int(5));
  row.updated_at = at(s.column_int(6));
  row.document = nlohmann::json::parse(s.column_text(7), nullptr, false);
  if (!s.column_is_null(8))
    row.pending_notifications = nlohmann::json::parse(s.column_text(8), nullptr, false);
  if (!s.column_is_null(9)) row.notified_at = at(s.column_int(9));
  if (row.document.is_discarded() || row.pending_notifications.is_discarded()) {
    return core::fail(core::ErrorCode::NotADatabase,
                      path.string() + ": alert " + row.id + ": document is not JSON");
  }
  return row;
}

constexpr const char* kColumns =
    "id, key_id, kind, direction, state, fired_at_ns, updated_at_ns, document, "
    "pending_notifications, notified_at_ns";

Result<std::vector<AlertRow>> collect_rows(Statement& stmt, const std::filesystem::path& path) {
  std::vector<AlertRow> out;
  while (true) {
    auto row = stmt.step();
    if (!row) return tl::unexpected(row.error().with_context(path.string()));
    if (!*row) break;
    auto alert = read_row(stmt, path);
    if (!alert) {
      stmt.reset();
      return tl::unexpected(alert.error());
    }
    out.push_back(std::move(*alert));
  }
  stmt.reset();
  return out;
}

}  // namespace

Status AlertStore::upsert(SqliteStore::Transaction& tx, const AlertRow& row) {
  KW_ASSERT(tx.db_ == store_->db_.get(), "transaction belongs to this store");
  auto stmt = store_->db_->prepare_cached(
      "INSERT INTO alerts (id, key_id, kind, direction, state, fired_at_ns, updated_at_ns, "
      "document, pending_notifications, notified_at_ns) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
      "ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, direction = excluded.direction, "
      "state = excluded.state, updated_at_ns = excluded.updated_at_ns, "
      "document = excluded.document, pending_notifications = excluded.pending_notifications, "
      "notified_at_ns = excluded.notified_at_ns");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)
      ->bind(1, row.id)
      .bind(2, row.key_id)
      .bind(3, row.kind)
      .bind(4, row.direction)
      .bind(5, row.state)
      .bind(6, ns(row.fired_at))
      .bind(7, ns(row.updated_at))
      .bind(8, row.document.dump());
  if (row.pending_notifications.is_null()) {
    (*stmt)->bind_null(9);
  } else {
    (*stmt)->bind(9, row.pending_notifications.dump());
  }
  if (row.notified_at) {
    (*stmt)->bind(10, ns(*row.notified_at));
  } else {
    (*stmt)->bind_null(10);
  }
  if (auto ok = (*stmt)->run(); !ok)
    return tl::unexpected(ok.error().with_context(store_->path().string()));
  return {};
}

Status AlertStore::record_action(SqliteStore::Transaction& tx, const AlertActionRow& row) {
  KW_ASSERT(tx.db_ == store_->db_.get(), "transaction belongs to this store");
  auto stmt = store_->db_->prepare_cached(
      "INSERT INTO alert_actions (alert_id, key_id, action, at_ns) VALUES (?1, ?2, ?3, ?4)");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)
      ->bind(1, row.alert_id)
      .bind(2, row.key_id)
      .bind(3,
            std::string_view(row.action == AlertAction::Acknowledge ? "acknowledge" : "rebaseline"))
      .bind(4, ns(row.at));
  if (auto ok = (*stmt)->run(); !ok)
    return tl::unexpected(ok.error().with_context(store_->path().string()));
  return {};
}

Result<std::vector<AlertRow>> AlertStore::list(std::string_view state, std::size_t limit) const {
  static const std::string sql =
      std::string("SELECT ") + kColumns +
      " FROM alerts WHERE (?1 = '' OR state = ?1) ORDER BY fired_at_ns DESC, id LIMIT ?2";
  auto stmt = store_->db_->prepare_cached(sql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, state).bind(2, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
  return collect_rows(**stmt, store_->path());
}

Result<std::vector<AlertRow>> AlertStore::with_pending_notifications() const {
  static const std::string sql = std::string("SELECT ") + kColumns +
                                 " FROM alerts WHERE pending_notifications IS NOT NULL "
                                 "ORDER BY fired_at_ns, id";
  auto stmt = store_->db_->prepare_cached(sql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  return collect_rows(**stmt, store_->path());
}

Status AlertStore::clear_pending_notifications(SqliteStore::Transaction& tx,
                                               core::Timestamp now) {
  KW_ASSERT(tx.db_ == store_->db_.get(), "transaction belongs to this store");
  auto stmt = store_->db_->prepare_cached(
      "UPDATE alerts SET pending_notifications = NULL, notified_at_ns = ?1 "
      "WHERE pending_notifications IS NOT NULL");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, ns(now));
  if (auto ok = (*stmt)->run(); !ok) {
    return tl::unexpected(ok.error().with_context(store_->path().string()));
  }
  return {};
}

Result<std::vector<AlertRow>> AlertStore::firing_notified_before(core::Timestamp cutoff) const {
  static const std::string sql = std::string("SELECT ") + kColumns +
                                 " FROM alerts WHERE state = 'firing' AND notified_at_ns <= ?1 "
                                 "ORDER BY notified_at_ns, id";
  auto stmt = store_->db_->prepare_cached(sql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, ns(cutoff));
  return collect_rows(**stmt, store_->path());
}

Result<std::optional<core::Timestamp>> AlertStore::oldest_firing_notification() const {
  auto stmt = store_->db_->prepare_cached(
      "SELECT min(notified_at_ns) FROM alerts WHERE state = 'firing'");
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = (*stmt)->step();
  if (!row) return tl::unexpected(row.error().with_context(store_->path().string()));
  std::optional<core::Timestamp> out;
  if (*row && !(*stmt)->column_is_null(0)) out = at((*stmt)->column_int(0));
  (*stmt)->reset();
  return out;
}

Result<std::optional<AlertRow>> AlertStore::find(std::string_view id) const {
  static const std::string sql = std::string("SELECT ") + kColumns + " FROM alerts WHERE id = ?1";
  auto stmt = store_->db_->prepare_cached(sql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, id);
  auto row = (*stmt)->step();
  if (!row) return tl::unexpected(row.error().with_context(store_->path().string()));
  std::optional<AlertRow> out;
  if (*row) {
    auto alert = read_row(**stmt, store_->path());
    if (!alert) {
      (*stmt)->reset();
      return tl::unexpected(alert.error());
    }
    out = std::move(*alert);
  }
  (*stmt)->reset();
  return out;
}

Result<std::vector<AlertActionRow>> AlertStore::actions() const {
  auto stmt = store_->db_->prepare_cached(
      "SELECT alert_id, key_id, action, at_ns FROM alert_actions ORDER BY at_ns, id");
  if (!stmt) return tl::unexpected(stmt.error());
  std::vector<AlertActionRow> out;
  while (true) {
    auto row = (*stmt)->step();
    if (!row) return tl::unexpected(row.error().with_context(store_->path().string()));
    if (!*row) break;
    AlertActionRow action;
    action.alert_id = (*stmt)->column_text(0);
    action.key_id = (*stmt)->column_int(1);
    action.action = (*stmt)->column_text(2) == "acknowledge" ? AlertAction::Acknowledge
                                                             : AlertAction::Rebaseline;
    action.at = at((*stmt)->column_int(3));
    out.push_back(std::move(action));
  }
  (*stmt)->reset();
  return out;
}

Result<std::int64_t> AlertStore::count_by_state(std::string_view state) const {
  auto stmt = store_->db_->prepare_cached("SELECT count(*) FROM alerts WHERE state = ?1");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, state);
  auto row = (*stmt)->step();
  if (!row) return tl::unexpected(row.error().with_context(store_->path().string()));
  const std::int64_t count = *row ? (*stmt)->column_int(0) : 0;
  (*stmt)->reset();
  return count;
}

}  // namespace kernelwatch::storage
