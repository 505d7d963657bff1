// Storage-private RAII over the SQLite C API: a connection, prepared statements with a cache,
// and errors that name the database file. Only storage/*.cpp include this header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <sqlite3.h>

#include "core/error.hpp"

namespace kernelwatch::storage {

using core::Result;
using core::Status;

struct ConnectionDeleter {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StatementDeleter {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};

// A prepared statement. Reset and unbound on every reuse through Database::prepare_cached.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, std::optional<std::int64_t> value);
  Statement& bind_null(int index);

  // True while a row is available; errors come back as Error (the statement stays usable).
  [[nodiscard]] Result<bool> step();
  [[nodiscard]] Status run();  // steps to completion, ignoring rows

  [[nodiscard]] std::int64_t column_int(int index) const;
  [[nodiscard]] std::optional<std::int64_t> column_optional_int(int index) const;
  [[nodiscard]] std::string column_text(int index) const;
  [[nodiscard]] bool column_is_null(int index) const;

  void reset();

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class Database {
 public:
  // Opens with SQLITE_OPEN_READONLY or READWRITE|CREATE; never runs a statement.
  [[nodiscard]] static Result<std::unique_ptr<Database>> open(const std::filesystem::path& path,
                                                              bool read_only, bool create);

  [[nodiscard]] Status exec(std::string_view sql);
  // A statement kept for the connection's lifetime; reset before it is handed out.
  [[nodiscard]] Result<Statement*> prepare_cached(const char* sql);
  [[nodiscard]] Result<std::int64_t> query_int(const char* sql);
  [[nodiscard]] std::int64_t changes() const { return sqlite3_changes64(db_.get()); }

  [[nodiscard]] Status begin_immediate() { return exec("BEGIN IMMEDIATE"); }
  [[nodiscard]] Status commit() { return exec("COMMIT"); }
  void rollback() noexcept;
  [[nodiscard]] bool in_transaction() const { return sqlite3_get_autocommit(db_.get()) == 0; }

  // "<file>: <what> failed: <sqlite message>"
  [[nodiscard]] core::Error error(std::string_view what) const;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  Database(std::filesystem::path path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::filesystem::path path_;
  std::unique_ptr<sqlite3, ConnectionDeleter> db_;
  std::unordered_map<const char*, std::unique_ptr<sqlite3_stmt, StatementDeleter>> cache_;
  std::unordered_map<const char*, Statement> statements_;
};

}  // namespace kernelwatch::storage
