#include "storage/detail/database.hpp"

namespace kernelwatch::storage {
namespace {

core::ErrorCode code_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return core::ErrorCode::NotADatabase;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return core::ErrorCode::Unavailable;
    case SQLITE_CONSTRAINT:
      return core::ErrorCode::Conflict;
    case SQLITE_NOMEM:
      return core::ErrorCode::OutOfMemory;
    case SQLITE_CANTOPEN:
      return core::ErrorCode::NotFound;
    default:
      return core::ErrorCode::IoError;
  }
}

}  // namespace

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Statement& Statement::bind(int index, std::optional<std::int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  core::Error error{code_for(sqlite3_extended_errcode(db_)),
                    std::string("statement failed: ") + sqlite3_errmsg(db_)};
  sqlite3_reset(stmt_);
  return tl::unexpected(std::move(error));
}

Status Statement::run() {
  while (true) {
    auto row = step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return {};
  }
}

std::int64_t Statement::column_int(int index) const {
  return sqlite3_column_int64(stmt_, index);
}

std::optional<std::int64_t> Statement::column_optional_int(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return sqlite3_column_int64(stmt_, index);
}

std::string Statement::column_text(int index) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  const int size = sqlite3_column_bytes(stmt_, index);
  return text == nullptr ? std::string() : std::string(text, static_cast<std::size_t>(size));
}

bool Statement::column_is_null(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Result<std::unique_ptr<Database>> Database::open(const std::filesystem::path& path, bool read_only,
                                                 bool create) {
  sqlite3* raw = nullptr;
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (!read_only && create) flags |= SQLITE_OPEN_CREATE;
  flags |= SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(path, raw));
  if (rc != SQLITE_OK) {
    return tl::unexpected(core::Error{
        code_for(rc),
        path.string() + ": cannot open: " + (raw ? sqlite3_errmsg(raw) : "out of memory")});
  }
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

Status Database::exec(std::string_view sql) {
  char* message = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return {};
  std::string why = message != nullptr ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return tl::unexpected(
      core::Error{code_for(sqlite3_extended_errcode(db_.get())), path_.string() + ": " + why});
}

Result<Statement*> Database::prepare_cached(const char* sql) {
  if (auto it = statements_.find(sql); it != statements_.end()) {
    it->second.reset();
    return &it->second;
  }
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  if (rc != SQLITE_OK) return tl::unexpected(error("prepare"));
  cache_.emplace(sql, std::unique_ptr<sqlite3_stmt, StatementDeleter>(raw));
  auto [it, inserted] = statements_.emplace(sql, Statement(db_.get(), raw));
  return &it->second;
}

Result<std::int64_t> Database::query_int(const char* sql) {
  auto stmt = prepare_cached(sql);
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = (*stmt)->step();
  if (!row) return tl::unexpected(row.error().with_context(path_.string()));
  const std::int64_t value = *row ? (*stmt)->column_int(0) : 0;
  (*stmt)->reset();
  return value;
}

void Database::rollback() noexcept {
  if (in_transaction()) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

core::Error Database::error(std::string_view what) const {
  return core::Error{
      code_for(sqlite3_extended_errcode(db_.get())),
      path_.string() + ": " + std::string(what) + " failed: " + sqlite3_errmsg(db_.get())};
}

}  // namespace kernelwatch::storage
