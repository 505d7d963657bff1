#include "storage/connection.hpp"

#include <array>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "storage/detail/database.hpp"
#include "storage/detail/postgres.hpp"
#include "storage/detail/schema.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

constexpr std::string_view kSqliteHeader{"SQLite format 3\0", 16};

// Reads the first 16 bytes without opening the file through SQLite, so a file that is not a
// database is rejected before anything could write to it.
Status check_header(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return core::fail(ErrorCode::NotADatabase, path.string() + ": not a regular file");
  }
  if (std::filesystem::file_size(path, ec) == 0) return {};
  std::ifstream in(path, std::ios::binary);
  std::array<char, 16> header{};
  if (!in.read(header.data(), header.size()) ||
      std::string_view(header.data(), header.size()) != kSqliteHeader) {
    return core::fail(ErrorCode::NotADatabase,
                      path.string() +
                          ": not a SQLite database (the file does not start with the "
                          "SQLite header); refusing to touch it");
  }
  return {};
}

// Reads the schema version through a read-only connection.
Result<std::int64_t> read_version(const std::filesystem::path& path) {
  auto db = KW_TRY(Database::open(path, OpenMode::ReadOnly));
  const std::int64_t version = KW_TRY(db->query_int("PRAGMA user_version"));
  if (version == 0) {
    const std::int64_t tables =
        KW_TRY(db->query_int("SELECT count(*) FROM sqlite_schema WHERE type = 'table'"));
    if (tables > 0) {
      return core::fail(ErrorCode::NotADatabase,
                        path.string() + ": a SQLite database, but not kernelwatch's (it has " +
                            std::to_string(tables) + " tables and no schema version)");
    }
  }
  return version;
}

// Every migration from the file's version to kSchemaVersion, and the new version, in one
// BEGIN IMMEDIATE transaction.
Status migrate(Connection& connection) {
  auto tx = KW_TRY(connection.begin());  // rolled back by every early return
  Database& db = connection.database();
  const std::int64_t version = KW_TRY(db.query_int("PRAGMA user_version"));
  const auto steps = migrations();
  for (auto v = static_cast<std::size_t>(version); v < steps.size(); ++v) {
    const std::string step = "migration to schema version " + std::to_string(v + 1);
    KW_TRY_WITH(db.exec(steps[v].sql), step);
    if (steps[v].rows != nullptr) KW_TRY_WITH(steps[v].rows(db), step);
  }
  KW_TRY(db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion)));
  return tx.commit();
}

// The checks an existing file passes before it is opened for writing: the SQLite header, then
// the schema version read through a read-only connection. A ReadOnly open of an older file
// migrates it once through a read-write connection, so a reader of an upgraded install does
// not have to run a writer first.
Status check_existing(const std::filesystem::path& path, OpenMode mode) {
  KW_TRY(check_header(path));
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0) {
    if (mode != OpenMode::ReadOnly) return {};
    return core::fail(ErrorCode::NotFound, path.string() + ": empty file, no kernelwatch database");
  }
  const std::int64_t version = KW_TRY(read_version(path));
  if (version > kSchemaVersion) {
    return core::fail(ErrorCode::VersionTooNew,
                      path.string() + ": written by a newer kernelwatch (schema version " +
                          std::to_string(version) + "; this build reads up to " +
                          std::to_string(kSchemaVersion) + "); upgrade kernelwatch to open it");
  }
  if (mode == OpenMode::ReadOnly && version < kSchemaVersion) {
    KW_TRY(Connection::open(path, OpenMode::Existing));
  }
  return {};
}

// Settings of every connection; for a writer also WAL, durability and foreign keys.
Status configure(Database& db, OpenMode mode) {
  KW_TRY(db.exec("PRAGMA busy_timeout = 5000"));
  if (mode == OpenMode::ReadOnly) return {};
  for (const char* pragma :
       {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"}) {
    KW_TRY(db.exec(pragma));
  }
  return {};
}

}  // namespace

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  if (db_ != nullptr) db_->rollback();
}

Status Transaction::commit() {
  KW_ASSERT(db_ != nullptr, "commit on a finished transaction");
  Database* db = std::exchange(db_, nullptr);
  auto ok = db->commit();
  if (!ok) db->rollback();
  return ok;
}

Connection::Connection(std::unique_ptr<Database> db) : db_(std::move(db)) {}
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;
Connection::~Connection() = default;

bool Connection::names_postgresql(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

Result<Connection> Connection::open_postgresql(const std::string& conninfo, OpenMode mode) {
  const auto location = KW_TRY(postgresql_location(conninfo));
  if (location.has_password) {
    return core::fail(ErrorCode::InvalidArgument,
                      location.shown +
                          ": the connection string holds a password; give it in a password file "
                          "(passfile=FILE, PGPASSFILE or ~/.pgpass) or PGPASSWORD instead, so "
                          "that it never appears in a configuration, a command line or a log");
  }
  auto db = KW_TRY(Database::open_postgresql(conninfo, location.shown, mode));
  KW_TRY(prepare_postgresql_schema(*db, mode != OpenMode::ReadOnly));
  return Connection(std::move(db));
}

Result<Connection> Connection::open(const std::filesystem::path& path, OpenMode mode) {
  if (names_postgresql(path.native())) return open_postgresql(path.native(), mode);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    KW_TRY(check_existing(path, mode));
  } else if (mode != OpenMode::Create) {
    return core::fail(ErrorCode::NotFound, path.string() + ": no such database");
  } else if (path.has_parent_path() && !std::filesystem::exists(path.parent_path(), ec)) {
    return core::fail(ErrorCode::NotFound, path.string() + ": directory " +
                                               path.parent_path().string() + " does not exist");
  }
  auto db = KW_TRY(Database::open(path, mode));
  KW_TRY(configure(*db, mode));
  Connection connection(std::move(db));
  if (mode != OpenMode::ReadOnly) KW_TRY(migrate(connection));
  return connection;
}

bool Connection::is_postgresql() const {
  return db_->dialect() == Dialect::PostgreSql;
}

Status Connection::claim_for_daemon() {
  return db_->claim_exclusive();
}

Result<Transaction> Connection::begin() {
  KW_ASSERT(!db_->in_transaction(), "one transaction at a time per connection");
  KW_TRY(db_->begin_immediate());
  return Transaction(*db_);
}

const std::filesystem::path& Connection::path() const {
  return db_->path();
}

}  // namespace kernelwatch::storage
