#include "storage/detail/database.hpp"

#include <fcntl.h>
#include <unistd.h>

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

std::int64_t nanoseconds(core::Timestamp t) {
  return static_cast<std::int64_t>(t.time_since_epoch().count());
}

}  // namespace

Statement& Statement::check_bind(int rc, int index) {
  if (rc != SQLITE_OK && !bind_error_) {
    bind_error_ =
        core::Error{code_for(rc), db_->path().string() + ": binding parameter " +
                                      std::to_string(index) + " failed: " + sqlite3_errstr(rc)};
  }
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  return check_bind(sqlite3_bind_int64(stmt_.get(), index, value), index);
}

Statement& Statement::bind(int index, std::string_view value) {
  return check_bind(sqlite3_bind_text64(stmt_.get(), index, value.data(), value.size(),
                                        SQLITE_TRANSIENT, SQLITE_UTF8),
                    index);
}

Statement& Statement::bind(int index, std::optional<std::int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, core::Timestamp value) {
  return bind(index, nanoseconds(value));
}

Statement& Statement::bind(int index, std::optional<core::Timestamp> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  return check_bind(sqlite3_bind_null(stmt_.get(), index), index);
}

Statement& Statement::bind_limit(int index, std::size_t limit) {
  return bind(index, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
}

Result<bool> Statement::step() {
  if (bind_error_) return tl::unexpected(*bind_error_);
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  core::Error error = db_->error("statement");
  sqlite3_reset(stmt_.get());
  return tl::unexpected(std::move(error));
}

Status Statement::run() {
  while (KW_TRY(step())) {
  }
  return {};
}

std::int64_t Statement::column_int(int index) const {
  return sqlite3_column_int64(stmt_.get(), index);
}

core::Timestamp Statement::column_timestamp(int index) const {
  return core::Timestamp{std::chrono::nanoseconds{column_int(index)}};
}

std::optional<core::Timestamp> Statement::column_optional_timestamp(int index) const {
  if (column_is_null(index)) return std::nullopt;
  return column_timestamp(index);
}

std::string Statement::column_text(int index) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), index));
  const int size = sqlite3_column_bytes(stmt_.get(), index);
  return text == nullptr ? std::string() : std::string(text, static_cast<std::size_t>(size));
}

bool Statement::column_is_null(int index) const {
  return sqlite3_column_type(stmt_.get(), index) == SQLITE_NULL;
}

void Statement::reset() noexcept {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
  bind_error_.reset();
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

Result<std::unique_ptr<Database>> Database::open(const std::filesystem::path& path, OpenMode mode) {
  if (mode == OpenMode::Create && path != ":memory:") {
    // A new database is created 0600 whatever the umask (it holds alert history and the
    // outbox's payloads); SQLite gives its -wal and -shm files the same mode.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, open_flags(mode), nullptr);
  std::unique_ptr<Database> db(new Database(path, raw));
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
    db.reset(new Database(path, immutable));
    if (again != SQLITE_OK) {
      return tl::unexpected(core::Error{
          code_for(again), path.string() + ": cannot open: " +
                               (immutable ? sqlite3_errmsg(immutable) : "out of memory")});
    }
    sqlite3_extended_result_codes(immutable, 1);
  }
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

Result<Statement::Handle> Database::statement(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* raw = nullptr;
    const int rc = sqlite3_prepare_v3(db_.get(), sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    if (rc != SQLITE_OK) return tl::unexpected(error("prepare"));
    KW_ASSERT(raw != nullptr, "a statement's text holds a statement");
    it = cache_.try_emplace(std::string(sql), *this, raw).first;
  }
  return Statement::Handle(it->second);
}

Result<std::int64_t> Database::query_int(std::string_view sql) {
  auto stmt = KW_TRY(statement(sql));
  return KW_TRY(stmt->step()) ? stmt->column_int(0) : 0;
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
