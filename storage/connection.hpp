// The connection to one kernelwatch database: opening (header and version checks, migrations)
// and write transactions. The run, alert and outbox stores are peers built on a Connection.
// Plain C++ over core types; sqlite3.h stays inside storage/*.cpp and storage/detail/.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kernelwatch::storage {

using core::Result;
using core::Status;

enum class OpenMode {
  Create,    // read-write; creates the file and the schema when missing
  Existing,  // read-write; the file must exist
  ReadOnly,  // never writes; the file must exist and be at the current schema
};

// Schema version written to PRAGMA user_version by this build.
inline constexpr int kSchemaVersion = 9;

class Database;  // SQLite or PostgreSQL, defined in storage/detail/database.hpp (storage-private)

// One write transaction (BEGIN IMMEDIATE); rolled back on destruction unless committed. The
// stores' writing calls take it, so what they write commits or rolls back together.
class Transaction {
 public:
  Transaction(Transaction&&) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  [[nodiscard]] Status commit();

  // True until commit(), on the database it was begun on: stores assert it before they write.
  [[nodiscard]] bool is_open_on(const Database& db) const noexcept { return db_ == &db; }

 private:
  friend class Connection;  // the only way to begin one
  explicit Transaction(Database& db) : db_(&db) {}
  Database* db_;
};

class Connection {
 public:
  // Opens (or creates) a kernelwatch database and migrates it to kSchemaVersion (ReadOnly: an
  // older file is migrated once through a read-write connection first). A file that is not
  // SQLite, or one written by a newer schema, fails with NotADatabase / VersionTooNew and is
  // left untouched.
  // A path that is a postgresql:// or postgres:// URL opens that PostgreSQL database instead
  // (open_postgresql).
  [[nodiscard]] static Result<Connection> open(const std::filesystem::path& path, OpenMode mode);

  // A PostgreSQL database through libpq (`conninfo`: a URL, or key=value pairs such as
  // "service=kernelwatch"), with the schema created in an empty database. The password comes from
  // a password file or the environment; a connection string that holds one is refused. Errors
  // name the server and database, never a password.
  [[nodiscard]] static Result<Connection> open_postgresql(const std::string& conninfo,
                                                          OpenMode mode);
  // True for a location that names a PostgreSQL database (a postgresql:// or postgres:// URL).
  [[nodiscard]] static bool names_postgresql(std::string_view location);
  // Whether this connection is to a PostgreSQL database (else a SQLite file).
  [[nodiscard]] bool is_postgresql() const;

  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;
  ~Connection();

  // The daemon's claim on its database for as long as this connection lives: a second daemon on
  // one PostgreSQL database is refused (Unavailable, naming the database). SQLite: nothing.
  [[nodiscard]] Status claim_for_daemon();

  // One transaction at a time per connection.
  [[nodiscard]] Result<Transaction> begin();

  [[nodiscard]] const std::filesystem::path& path() const;

  // What RunStore, AlertStore and Outbox are built on. The type is complete only inside
  // storage/; it lives on the heap, so it outlives moves of the Connection.
  [[nodiscard]] Database& database() const { return *db_; }

 private:
  explicit Connection(std::unique_ptr<Database> db);
  std::unique_ptr<Database> db_;
};

}  // namespace kernelwatch::storage
