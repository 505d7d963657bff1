// Storage-private RAII over the SQLite C API: a connection, prepared statements cached by their
// SQL text, checked binds, and errors that name the database file. Only storage/*.cpp (and the
// storage tests) include this header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sqlite3.h>

#include "core/error.hpp"
#include "core/time.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

struct ConnectionDeleter {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StatementDeleter {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};

// A prepared statement, owned by the Database's cache and handed out for one use at a time
// through a Statement::Handle. A bind that SQLite refuses is remembered (the first one) and
// returned by step() and run(), so a half-bound statement never runs.
class Statement {
 public:
  class Handle;

  Statement(const Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, std::string_view value);
  // Text SQLite does not copy: it must stay unchanged until this use of the statement ends (the
  // Handle goes away). For the import's hot insert.
  Statement& bind_unowned(int index, std::string_view value);
  Statement& bind(int index, std::optional<std::int64_t> value);
  Statement& bind(int index, core::Timestamp value);  // as nanoseconds since the epoch
  Statement& bind(int index, std::optional<core::Timestamp> value);
  Statement& bind_null(int index);
  // A LIMIT: 0 means no limit (SQLite's -1).
  Statement& bind_limit(int index, std::size_t limit);

  // True while a row is available; errors come back as Error (the statement stays usable).
  [[nodiscard]] Result<bool> step();
  [[nodiscard]] Status run();  // steps to completion, ignoring rows

  [[nodiscard]] std::int64_t column_int(int index) const;
  [[nodiscard]] core::Timestamp column_timestamp(int index) const;
  [[nodiscard]] std::optional<core::Timestamp> column_optional_timestamp(int index) const;
  [[nodiscard]] std::string column_text(int index) const;
  [[nodiscard]] bool column_is_null(int index) const;

 private:
  Statement& check_bind(int rc, int index);
  void reset() noexcept;  // by the Handle: unbound, no open read, no remembered bind error

  const Database* db_;
  std::unique_ptr<sqlite3_stmt, StatementDeleter> stmt_;
  std::optional<core::Error> bind_error_;
  bool in_use_ = false;
};

// One use of a cached statement. Going away resets and unbinds it, so no read stays open past
// its caller and the next use starts clean. Asking for a statement that is still in use (the
// same SQL text, nested) is a bug and aborts.
class Statement::Handle {
 public:
  explicit Handle(Statement& statement);
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&&) = delete;
  ~Handle();

  Statement* operator->() const noexcept { return statement_; }
  Statement& operator*() const noexcept { return *statement_; }

 private:
  Statement* statement_;
};

class Database {
 public:
  // Opens read-only, read-write, or read-write creating the file; never runs a statement.
  [[nodiscard]] static Result<std::unique_ptr<Database>> open(const std::filesystem::path& path,
                                                              OpenMode mode);

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  [[nodiscard]] Status exec(std::string_view sql);
  // The statement for this SQL text, prepared on first use and kept for the connection's
  // lifetime. Keyed by the text, so equal text built anywhere shares one statement.
  [[nodiscard]] Result<Statement::Handle> statement(std::string_view sql);
  [[nodiscard]] Result<std::int64_t> query_int(std::string_view sql);
  [[nodiscard]] std::int64_t changes() const { return sqlite3_changes64(db_.get()); }
  [[nodiscard]] std::size_t cached_statements() const { return cache_.size(); }

  [[nodiscard]] Status begin_immediate() { return exec("BEGIN IMMEDIATE"); }
  [[nodiscard]] Status commit() { return exec("COMMIT"); }
  void rollback() noexcept;
  [[nodiscard]] bool in_transaction() const { return sqlite3_get_autocommit(db_.get()) == 0; }

  // "<file>: <what> failed: <sqlite message>"
  [[nodiscard]] core::Error error(std::string_view what) const;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] sqlite3* handle() const { return db_.get(); }

 private:
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };

  Database(std::filesystem::path path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::filesystem::path path_;
  std::unique_ptr<sqlite3, ConnectionDeleter> db_;  // declared first: closed after the cache
  std::unordered_map<std::string, Statement, TextHash, std::equal_to<>> cache_;
};

namespace detail {
template <class T>
struct RowOf {
  using type = T;
};
template <class T>
struct RowOf<Result<T>> {
  using type = T;
};
// What read(const Statement&) yields, whether it returns a T or a Result<T>.
template <class Read>
using row_of = typename RowOf<std::invoke_result_t<Read&, const Statement&>>::type;
}  // namespace detail

// Every row the statement yields, each turned into a value by read(const Statement&), which
// returns the value or a Result of it (the first error ends the walk).
template <class Read>
[[nodiscard]] Result<std::vector<detail::row_of<Read>>> collect(Statement& stmt, Read read) {
  std::vector<detail::row_of<Read>> rows;
  while (KW_TRY(stmt.step())) {
    rows.push_back(KW_TRY(Result<detail::row_of<Read>>(read(std::as_const(stmt)))));
  }
  return rows;
}

// The statement's first row turned into a value by read; nullopt when there is none.
template <class Read>
[[nodiscard]] Result<std::optional<detail::row_of<Read>>> first_row(Statement& stmt, Read read) {
  if (!KW_TRY(stmt.step())) return std::optional<detail::row_of<Read>>();
  return std::optional<detail::row_of<Read>>(
      KW_TRY(Result<detail::row_of<Read>>(read(std::as_const(stmt)))));
}

}  // namespace kernelwatch::storage
