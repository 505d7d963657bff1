// Storage-private: a connection to SQLite (storage/database.cpp) or PostgreSQL
// (storage/postgres.cpp), prepared statements cached by their SQL text, checked binds, and errors
// that name the database. Only storage/*.cpp (and the storage tests) include this header.
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

#include "core/error.hpp"
#include "core/time.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

// Which SQL engine a Database speaks. Statements are written once, in SQLite's spelling
// (`?N` parameters, json_extract, json_each); the PostgreSQL connection translates the few
// differences when it prepares them (storage/postgres.cpp).
enum class Dialect { Sqlite, PostgreSql };

// A prepared statement, owned by the Database's cache and handed out for one use at a time
// through a Statement::Handle. A bind that the engine refuses is remembered (the first one) and
// returned by step() and run(), so a half-bound statement never runs.
class Statement {
 public:
  class Handle;

  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  virtual ~Statement() = default;

  Statement& bind(int index, std::int64_t value) { return bind_int(index, value), *this; }
  Statement& bind(int index, std::string_view value) {
    return bind_text(index, value, /*copy=*/true), *this;
  }
  // Text the engine need not copy: it must stay unchanged until this use of the statement ends
  // (the Handle goes away). For the import's hot insert.
  Statement& bind_unowned(int index, std::string_view value) {
    return bind_text(index, value, /*copy=*/false), *this;
  }
  Statement& bind(int index, std::optional<std::int64_t> value) {
    return value ? bind(index, *value) : bind_null(index);
  }
  Statement& bind(int index, core::Timestamp value) {  // as nanoseconds since the epoch
    return bind(index, static_cast<std::int64_t>(value.time_since_epoch().count()));
  }
  Statement& bind(int index, std::optional<core::Timestamp> value) {
    return value ? bind(index, *value) : bind_null(index);
  }
  Statement& bind_null(int index) { return bind_no_value(index), *this; }
  // A LIMIT: 0 means no limit.
  Statement& bind_limit(int index, std::size_t limit) {
    if (limit == 0) return bind_no_limit(index), *this;
    return bind(index, static_cast<std::int64_t>(limit));
  }

  // True while a row is available; errors come back as Error (the statement stays usable).
  [[nodiscard]] virtual Result<bool> step() = 0;
  [[nodiscard]] Status run();  // steps to completion, ignoring rows

  [[nodiscard]] virtual std::int64_t column_int(int index) const = 0;
  [[nodiscard]] core::Timestamp column_timestamp(int index) const {
    return core::Timestamp{std::chrono::nanoseconds{column_int(index)}};
  }
  [[nodiscard]] std::optional<core::Timestamp> column_optional_timestamp(int index) const {
    if (column_is_null(index)) return std::nullopt;
    return column_timestamp(index);
  }
  [[nodiscard]] virtual std::string column_text(int index) const = 0;
  [[nodiscard]] virtual bool column_is_null(int index) const = 0;

 protected:
  Statement() = default;
  virtual void bind_int(int index, std::int64_t value) = 0;
  virtual void bind_text(int index, std::string_view value, bool copy) = 0;
  virtual void bind_no_value(int index) = 0;
  virtual void bind_no_limit(int index) = 0;
  // By the Handle: unbound, no open read, no remembered bind error.
  virtual void reset() noexcept = 0;

 private:
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

// One connection to a database engine, with its statements cached by their SQL text.
class Database {
 public:
  // A SQLite file, opened read-only, read-write, or read-write creating the file; never runs a
  // statement.
  [[nodiscard]] static Result<std::unique_ptr<Database>> open(const std::filesystem::path& path,
                                                              OpenMode mode);
  // A PostgreSQL server through libpq: `conninfo` is a postgresql:// URL or key=value
  // parameters (service=NAME, passfile=FILE); `shown` is how errors name it (no password).
  [[nodiscard]] static Result<std::unique_ptr<Database>> open_postgresql(
      const std::string& conninfo, std::string shown, OpenMode mode);

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  virtual ~Database() = default;

  [[nodiscard]] virtual Dialect dialect() const noexcept = 0;
  [[nodiscard]] virtual Status exec(std::string_view sql) = 0;
  // The statement for this SQL text, prepared on first use and kept for the connection's
  // lifetime. Keyed by the text, so equal text built anywhere shares one statement.
  [[nodiscard]] Result<Statement::Handle> statement(std::string_view sql);
  [[nodiscard]] Result<std::int64_t> query_int(std::string_view sql);
  // Rows the last INSERT, UPDATE or DELETE changed.
  [[nodiscard]] virtual std::int64_t changes() const = 0;
  [[nodiscard]] std::size_t cached_statements() const { return cache_.size(); }

  // A write transaction (SQLite: BEGIN IMMEDIATE, so a writer waits at its start, not at its
  // first write).
  [[nodiscard]] virtual Status begin_immediate() = 0;
  [[nodiscard]] virtual Status commit() { return exec("COMMIT"); }
  virtual void rollback() noexcept = 0;
  [[nodiscard]] virtual bool in_transaction() const = 0;

  // Keeps every other daemon that asks from using this database (PostgreSQL: this database's
  // schema) for as long as this connection lives (PostgreSQL: a session advisory lock per
  // schema, taken again after a reconnect); Unavailable when another holds it. SQLite: nothing
  // (one file per host).
  [[nodiscard]] virtual Status claim_exclusive() { return {}; }

  // The file, or for PostgreSQL the server and database (never a password): what errors name.
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 protected:
  explicit Database(std::filesystem::path path) : path_(std::move(path)) {}
  [[nodiscard]] virtual Result<std::unique_ptr<Statement>> prepare(std::string_view sql) = 0;
  // Called first by a subclass's destructor: the statements go before the connection.
  void drop_statements() noexcept { cache_.clear(); }

 private:
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };

  std::filesystem::path path_;
  std::unordered_map<std::string, std::unique_ptr<Statement>, TextHash, std::equal_to<>> cache_;
};

// A PostgreSQL identifier in double quotes, its own quotes doubled: any name (a schema read
// from the catalog) is safe in a statement's text.
[[nodiscard]] inline std::string quoted_identifier(std::string_view name) {
  std::string out = "\"";
  for (const char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

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
