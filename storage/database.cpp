#include "storage/detail/database.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <sqlite3.h>

#include <cctype>

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
    case SQLITE_RANGE:  // a parameter index the statement does not have: our SQL is wrong
      return core::ErrorCode::Internal;
    default:
      return core::ErrorCode::IoError;
  }
}

int open_flags(OpenMode mode) {
  switch (mode) {
    case OpenMode::ReadOnly:
      return SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
    case OpenMode::Existing:
      return SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    case OpenMode::Create:
      return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  }
  return SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
}

// A WAL database in a folder this process cannot write (a read-only mount) cannot get the -shm
// file its readers share, and its first read fails with SQLITE_CANTOPEN. Without a -wal file
// (the last writer closed cleanly) everything is in the database file: it can be read as
// immutable (no -shm, no locks). With one, the error stands: its changes would be missed.
bool readable_only_as_immutable(sqlite3* db, const std::filesystem::path& path) {
  if (sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", nullptr, nullptr, nullptr) ==
      SQLITE_OK) {
    return false;
  }
  const int primary = sqlite3_extended_errcode(db) & 0xff;
  if (primary != SQLITE_CANTOPEN && primary != SQLITE_READONLY) return false;
  std::error_code ec;
  const std::filesystem::path wal = path.string() + "-wal";
  return !std::filesystem::exists(wal, ec) || std::filesystem::file_size(wal, ec) == 0;
}

// "file:" and the path with every byte but unreserved ones and '/' percent-encoded (RFC 8089).
std::string file_uri(const std::filesystem::path& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const char c : std::filesystem::absolute(path).string()) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      uri.push_back(c);
    } else {
      uri += {'%', kHex[byte >> 4], kHex[byte & 0xf]};
    }
  }
  return uri;
}

struct ConnectionDeleter {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StatementDeleter {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};

class SqliteDatabase;

class SqliteStatement final : public Statement {
 public:
  SqliteStatement(const SqliteDatabase& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}

  Result<bool> step() override;
  std::int64_t column_int(int index) const override {
    return sqlite3_column_int64(stmt_.get(), index);
  }
  std::string column_text(int index) const override {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), index));
    const int size = sqlite3_column_bytes(stmt_.get(), index);
    return text == nullptr ? std::string() : std::string(text, static_cast<std::size_t>(size));
  }
  bool column_is_null(int index) const override {
    return sqlite3_column_type(stmt_.get(), index) == SQLITE_NULL;
  }

 private:
  void bind_int(int index, std::int64_t value) override {
    check_bind(sqlite3_bind_int64(stmt_.get(), index, value), index);
  }
  void bind_text(int index, std::string_view value, bool copy) override {
    check_bind(sqlite3_bind_text64(stmt_.get(), index, value.data(), value.size(),
                                   copy ? SQLITE_TRANSIENT : SQLITE_STATIC, SQLITE_UTF8),
               index);
  }
  void bind_no_value(int index) override {
    check_bind(sqlite3_bind_null(stmt_.get(), index), index);
  }
  void bind_no_limit(int index) override { bind_int(index, -1); }  // SQLite's "no limit"
  void reset() noexcept override {
    sqlite3_reset(stmt_.get());
    sqlite3_clear_bindings(stmt_.get());
    bind_error_.reset();
  }
  void check_bind(int rc, int index);

  const SqliteDatabase* db_;
  std::unique_ptr<sqlite3_stmt, StatementDeleter> stmt_;
  std::optional<core::Error> bind_error_;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::filesystem::path path, sqlite3* db) : Database(std::move(path)), db_(db) {}
  ~SqliteDatabase() override { drop_statements(); }

  Dialect dialect() const noexcept override { return Dialect::Sqlite; }
  Status exec(std::string_view sql) override;
  std::int64_t changes() const override { return sqlite3_changes64(db_.get()); }
  Status begin_immediate() override { return exec("BEGIN IMMEDIATE"); }
  void rollback() noexcept override {
    if (in_transaction()) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  bool in_transaction() const override { return sqlite3_get_autocommit(db_.get()) == 0; }

  // "<file>: <what> failed: <sqlite message>"
  core::Error error(std::string_view what) const {
    return core::Error{
        code_for(sqlite3_extended_errcode(db_.get())),
        path().string() + ": " + std::string(what) + " failed: " + sqlite3_errmsg(db_.get())};
  }

 private:
  Result<std::unique_ptr<Statement>> prepare(std::string_view sql) override;
  std::unique_ptr<sqlite3, ConnectionDeleter> db_;
};

void SqliteStatement::check_bind(int rc, int index) {
  if (rc != SQLITE_OK && !bind_error_) {
    bind_error_ =
        core::Error{code_for(rc), db_->path().string() + ": binding parameter " +
                                      std::to_string(index) + " failed: " + sqlite3_errstr(rc)};
  }
}

Result<bool> SqliteStatement::step() {
  if (bind_error_) return tl::unexpected(*bind_error_);
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  core::Error error = db_->error("statement");
  sqlite3_reset(stmt_.get());
  return tl::unexpected(std::move(error));
}

Status SqliteDatabase::exec(std::string_view sql) {
  char* message = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return {};
  std::string why = message != nullptr ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return tl::unexpected(
      core::Error{code_for(sqlite3_extended_errcode(db_.get())), path().string() + ": " + why});
}

Result<std::unique_ptr<Statement>> SqliteDatabase::prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db_.get(), sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  if (rc != SQLITE_OK) return tl::unexpected(error("prepare"));
  KW_ASSERT(raw != nullptr, "a statement's text holds a statement");
  return std::make_unique<SqliteStatement>(*this, raw);
}

}  // namespace

Status Statement::run() {
  while (KW_TRY(step())) {
  }
  return {};
}

Statement::Handle::Handle(Statement& statement) : statement_(&statement) {
  KW_ASSERT(!statement.in_use_, "a cached statement is used again before its last use ended");
  statement.in_use_ = true;
}

Statement::Handle::Handle(Handle&& other) noexcept
    : statement_(std::exchange(other.statement_, nullptr)) {}

Statement::Handle::~Handle() {
  if (statement_ == nullptr) return;
  statement_->reset();
  statement_->in_use_ = false;
}

Result<Statement::Handle> Database::statement(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) it = cache_.try_emplace(std::string(sql), KW_TRY(prepare(sql))).first;
  return Statement::Handle(*it->second);
}

Result<std::int64_t> Database::query_int(std::string_view sql) {
  auto stmt = KW_TRY(statement(sql));
  return KW_TRY(stmt->step()) ? stmt->column_int(0) : 0;
}

Result<std::unique_ptr<Database>> Database::open(const std::filesystem::path& path, OpenMode mode) {
  // No memory statistics (kernelwatch reads none): SQLite otherwise takes a global mutex on every
  // allocation, a few percent of an import. Must come before SQLite initializes; later it is
  // refused, harmlessly.
  static const int configured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)configured;
  if (mode == OpenMode::Create && path != ":memory:") {
    // A new database is created 0600 whatever the umask (it holds alert history and the
    // outbox's payloads); SQLite gives its -wal and -shm files the same mode.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, open_flags(mode), nullptr);
  std::unique_ptr<Database> db = std::make_unique<SqliteDatabase>(path, raw);
  if (rc != SQLITE_OK) {
    return tl::unexpected(core::Error{
        code_for(rc),
        path.string() + ": cannot open: " + (raw ? sqlite3_errmsg(raw) : "out of memory")});
  }
  sqlite3_extended_result_codes(raw, 1);
  if (mode == OpenMode::ReadOnly && path != ":memory:" && readable_only_as_immutable(raw, path)) {
    sqlite3* immutable = nullptr;
    const int again = sqlite3_open_v2((file_uri(path) + "?immutable=1").c_str(), &immutable,
                                      open_flags(mode) | SQLITE_OPEN_URI, nullptr);
    db = std::make_unique<SqliteDatabase>(path, immutable);
    if (again != SQLITE_OK) {
      return tl::unexpected(core::Error{
          code_for(again), path.string() + ": cannot open: " +
                               (immutable ? sqlite3_errmsg(immutable) : "out of memory")});
    }
    sqlite3_extended_result_codes(immutable, 1);
  }
  return db;
}

}  // namespace kernelwatch::storage
