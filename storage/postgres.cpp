// The PostgreSQL connection behind storage::Database, through libpq. Statements keep their
// SQLite spelling and are translated once, when prepared: `?N` parameters become `$N`, the JSON
// functions SQLite has built in (json_extract, json_valid, json_each) become the kw_json_*
// functions the PostgreSQL schema defines (storage/postgres_schema.cpp), instr() is strpos(), and
// an INDEXED BY hint is dropped. Values travel as text,
// so a column reads the same through either engine.
//
// A lost connection is reset before the next statement that runs outside a transaction (and
// every cached statement is prepared again on the new one); inside a transaction the statement
// fails with Unavailable, the transaction is gone, and its caller's batch was not committed.
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/detail/database.hpp"
#include "storage/detail/postgres.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

struct ConnDeleter {
  void operator()(PGconn* conn) const noexcept { PQfinish(conn); }
};
struct ResultDeleter {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

ErrorCode code_for_state(std::string_view state) {
  if (state.starts_with("23")) return ErrorCode::Conflict;                  // integrity constraint
  if (state.starts_with("08")) return ErrorCode::Unavailable;               // connection exception
  if (state.starts_with("57P")) return ErrorCode::Unavailable;              // server shutting down
  if (state == "40001" || state == "40P01") return ErrorCode::Unavailable;  // retry the batch
  if (state.starts_with("53")) return ErrorCode::OutOfMemory;      // insufficient resources
  if (state.starts_with("22")) return ErrorCode::InvalidArgument;  // a value it cannot hold
  if (state.starts_with("42")) return ErrorCode::Internal;         // our SQL is wrong
  return ErrorCode::IoError;
}

std::string trimmed(const char* text) {
  std::string out = text != nullptr ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

void ignore_notice(void*, const char*) {}

}  // namespace

PostgresqlStatement translate_to_postgresql(std::string_view sql) {
  PostgresqlStatement translated;
  std::string& out = translated.text;
  out.reserve(sql.size() + 16);
  char quote = 0;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote != 0) {
      out.push_back(c);
      if (c == quote) quote = 0;  // a doubled quote reopens at the next character
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out.push_back(c);
      continue;
    }
    if (c == '?' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      std::size_t n = 0;
      for (; i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9'; ++i) {
        n = n * 10 + static_cast<std::size_t>(sql[i + 1] - '0');
      }
      out += "$" + std::to_string(n);
      if (translated.parameters.size() < n) translated.parameters.resize(n, false);
      translated.parameters[n - 1] = true;
      continue;
    }
    const bool word_start =
        i == 0 || !(std::isalnum(static_cast<unsigned char>(sql[i - 1])) || sql[i - 1] == '_');
    if (word_start) {
      // SQLite's names for what PostgreSQL spells otherwise; an INDEXED BY hint goes (the
      // PostgreSQL planner takes none).
      static constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
          {"json_extract(", "kw_json_extract("},
          {"json_valid(", "kw_json_valid("},
          {"json_each(", "kw_json_each("},
          {"instr(", "strpos("}};
      bool replaced = false;
      for (const auto& [from, to] : kRenames) {
        if (sql.substr(i, from.size()) == from) {
          out += to;
          i += from.size() - 1;
          replaced = true;
          break;
        }
      }
      if (replaced) continue;
      constexpr std::string_view kHint = "INDEXED BY ";
      if (sql.substr(i, kHint.size()) == kHint) {
        i += kHint.size();
        while (i < sql.size() &&
               (std::isalnum(static_cast<unsigned char>(sql[i])) || sql[i] == '_'))
          ++i;
        while (i < sql.size() && sql[i] == ' ') ++i;
        --i;
        continue;
      }
    }
    out.push_back(c);
  }
  return translated;
}

namespace {

class PgDatabase;

class PgStatement final : public Statement {
 public:
  PgStatement(PgDatabase& db, std::string sql, std::string name, std::vector<bool> used)
      : db_(&db),
        sql_(std::move(sql)),
        name_(std::move(name)),
        used_(std::move(used)),
        values_(used_.size()) {}

  Result<bool> step() override;
  std::int64_t column_int(int index) const override {
    const char* text = PQgetvalue(result_.get(), row_, index);
    std::int64_t value = 0;
    if (text == nullptr) return 0;
    if (text[0] == 't' && text[1] == '\0') return 1;  // a boolean, as SQLite counts it
    if (text[0] == 'f' && text[1] == '\0') return 0;
    const auto* end = text + std::strlen(text);
    auto [ptr, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || ptr != end) {
      // An aggregate (sum) comes back as numeric: "3" parses above, "3.0" here.
      double real = 0;
      std::from_chars(text, end, real);
      value = static_cast<std::int64_t>(real);
    }
    return value;
  }
  std::string column_text(int index) const override {
    const char* text = PQgetvalue(result_.get(), row_, index);
    return text == nullptr
               ? std::string()
               : std::string(text,
                             static_cast<std::size_t>(PQgetlength(result_.get(), row_, index)));
  }
  bool column_is_null(int index) const override {
    return PQgetisnull(result_.get(), row_, index) != 0;
  }

  [[nodiscard]] const std::string& sql() const { return sql_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::vector<bool>& used() const { return used_; }  // $1.. named in the text
  std::uint64_t prepared_on = 0;  // the connection generation it was prepared on

 private:
  void bind_int(int index, std::int64_t value) override {
    if (check_index(index)) values_[index - 1] = std::to_string(value);
  }
  void bind_text(int index, std::string_view value, bool) override;
  void bind_no_value(int index) override {
    if (check_index(index)) values_[index - 1].reset();
  }
  void bind_no_limit(int index) override { bind_no_value(index); }  // LIMIT NULL: no limit
  void reset() noexcept override {
    result_.reset();
    row_ = -1;
    for (auto& value : values_) value.reset();
    bind_error_.reset();
  }
  bool check_index(int index);

  PgDatabase* db_;
  std::string sql_;
  std::string name_;
  std::vector<bool> used_;
  std::vector<std::optional<std::string>> values_;
  std::optional<core::Error> bind_error_;
  ResultPtr result_;
  int row_ = -1;
};

class PgDatabase final : public Database {
 public:
  PgDatabase(std::filesystem::path shown, PGconn* conn, OpenMode mode)
      : Database(std::move(shown)), conn_(conn), mode_(mode) {}
  ~PgDatabase() override { drop_statements(); }

  Dialect dialect() const noexcept override { return Dialect::PostgreSql; }

  Status exec(std::string_view sql) override {
    const std::string text(sql);
    return with_retry([&]() -> Status {
      ResultPtr result(PQexec(conn_.get(), text.c_str()));
      return check(result.get(), "statement");
    });
  }

  // f() on a connected session; once more on a new one when the connection turned out to be
  // lost outside a transaction (a restarted server).
  template <class F>
  auto with_retry(F f) -> decltype(f()) {
    for (int attempt = 0;; ++attempt) {
      if (auto connected = ensure_connected(); !connected) {
        return tl::unexpected(connected.error());
      }
      auto done = f();
      if (done || !retry_after(attempt)) return done;
    }
  }

  std::int64_t changes() const override { return changes_; }
  Status begin_immediate() override {
    KW_TRY(exec("BEGIN"));
    transaction_open_ = true;
    return {};
  }
  // COMMIT of a transaction PostgreSQL already aborted answers "ROLLBACK", and one on a new
  // session (the old one lost) only warns: neither is a commit.
  Status commit() override {
    const bool was_open = transaction_open_ && in_transaction();
    transaction_open_ = false;
    if (!was_open) {
      return core::fail(
          ErrorCode::Unavailable,
          path().string() + ": commit failed: the transaction was lost with the connection");
    }
    ResultPtr result(PQexec(conn_.get(), "COMMIT"));
    KW_TRY(check(result.get(), "commit"));
    if (std::string_view(PQcmdStatus(result.get())) != "COMMIT") {
      return core::fail(ErrorCode::IoError, path().string() +
                                                ": commit failed: a statement of the transaction "
                                                "failed before it, so PostgreSQL rolled it back");
    }
    return {};
  }
  void rollback() noexcept override {
    transaction_open_ = false;
    if (in_transaction()) ResultPtr(PQexec(conn_.get(), "ROLLBACK"));
  }
  bool in_transaction() const override {
    const auto status = PQtransactionStatus(conn_.get());
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
  }

  Status claim_exclusive() override {
    KW_TRY(with_retry([&] { return take_claim(); }));
    claimed_ = true;
    return {};
  }

  // Runs `statement` with its bound values; the result, or the error naming the server.
  Result<ResultPtr> execute(PgStatement& statement,
                            const std::vector<std::optional<std::string>>& values) {
    std::vector<const char*> pointers;
    pointers.reserve(values.size());
    for (const auto& value : values) pointers.push_back(value ? value->c_str() : nullptr);
    ResultPtr result;
    KW_TRY(with_retry([&]() -> Status {
      if (statement.prepared_on != generation_) KW_TRY(prepare_on_server(statement));
      result.reset(PQexecPrepared(conn_.get(), statement.name().c_str(),
                                  static_cast<int>(pointers.size()), pointers.data(), nullptr,
                                  nullptr, 0));
      return check(result.get(), "statement");
    }));
    if (PQresultStatus(result.get()) == PGRES_COMMAND_OK) {
      const char* tuples = PQcmdTuples(result.get());
      changes_ = (tuples != nullptr && *tuples != '\0') ? std::atoll(tuples) : 0;
    }
    return result;
  }

  Status check(const PGresult* result, std::string_view what) const {
    const auto status = result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return {};
    const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    const bool lost = PQstatus(conn_.get()) == CONNECTION_BAD;
    const ErrorCode code =
        lost || state == nullptr ? ErrorCode::Unavailable : code_for_state(state);
    std::string why = trimmed(result != nullptr ? PQresultErrorMessage(result) : nullptr);
    if (why.empty()) why = trimmed(PQerrorMessage(conn_.get()));
    if (lost) why += " (the connection to the server was lost; an open transaction is rolled back)";
    return tl::unexpected(
        core::Error{code, path().string() + ": " + std::string(what) + " failed: " + why});
  }

  [[nodiscard]] core::Error bind_failure(int index, std::string why) const {
    return core::Error{ErrorCode::InvalidArgument, path().string() + ": binding parameter " +
                                                       std::to_string(index) +
                                                       " failed: " + std::move(why)};
  }

  // The session settings every connection (and every reconnection) gets.
  Status configure() {
    PQsetNoticeProcessor(conn_.get(), ignore_notice, nullptr);
    ResultPtr encoding(PQexec(conn_.get(), "SET client_encoding = 'UTF8'"));
    KW_TRY(check(encoding.get(), "setting the client encoding"));
    if (mode_ == OpenMode::ReadOnly) {
      ResultPtr read_only(PQexec(conn_.get(), "SET default_transaction_read_only = on"));
      KW_TRY(check(read_only.get(), "opening read-only"));
    }
    if (claimed_) KW_TRY(take_claim());  // a reconnection takes it again
    return {};
  }

 private:
  Result<std::unique_ptr<Statement>> prepare(std::string_view sql) override {
    auto [text, used] = translate_to_postgresql(sql);
    auto statement = std::make_unique<PgStatement>(
        *this, std::move(text), "kw" + std::to_string(++statements_), std::move(used));
    KW_TRY(with_retry([&] { return prepare_on_server(*statement); }));
    return statement;
  }

  Status prepare_on_server(PgStatement& statement) {
    // A parameter the text never names (a statement that leaves ?1 out) has no type to infer:
    // it is declared text; every other one PostgreSQL infers from where it stands.
    const auto& used = statement.used();
    std::vector<Oid> types(used.size(), 0);
    for (std::size_t i = 0; i < used.size(); ++i) {
      if (!used[i]) types[i] = 25;  // TEXTOID
    }
    ResultPtr result(PQprepare(conn_.get(), statement.name().c_str(), statement.sql().c_str(),
                               static_cast<int>(types.size()), types.data()));
    if (auto prepared = check(result.get(), "prepare"); !prepared) {
      // The statement's text names what PostgreSQL could not read (it holds no value).
      return tl::unexpected(core::Error{prepared.error().code, prepared.error().message + " in: " +
                                                                   statement.sql().substr(0, 300)});
    }
    statement.prepared_on = generation_;
    return {};
  }

  // Outside a transaction a lost connection is reset here, before the statement that needs it;
  // inside one the statement fails (its transaction is gone with the connection).
  Status ensure_connected() {
    if (PQstatus(conn_.get()) == CONNECTION_OK && !needs_configure_) return {};
    if (transaction_open_) {
      // A new session must not run the rest of a batch whose first part died with the old one.
      return core::fail(ErrorCode::Unavailable,
                        path().string() +
                            ": the connection to the server was lost; the open "
                            "transaction is rolled back");
    }
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      PQreset(conn_.get());
      if (PQstatus(conn_.get()) != CONNECTION_OK) {
        return core::fail(ErrorCode::Unavailable, path().string() + ": cannot reconnect: " +
                                                      trimmed(PQerrorMessage(conn_.get())));
      }
      ++generation_;  // every statement is prepared again on the new session
    }
    // Until the session is set up (its claim taken again above all), nothing runs on it.
    needs_configure_ = true;
    KW_TRY(configure());
    needs_configure_ = false;
    return {};
  }

  // After a failed statement: true when it failed because the connection was lost outside a
  // transaction (a restarted server), so that it runs once more on a new session.
  bool retry_after(int attempt) const {
    return attempt == 0 && !transaction_open_ && PQstatus(conn_.get()) == CONNECTION_BAD;
  }

  // One claim per schema, so that the daemons of a fleet share a database, each host in its own
  // schema (docs/FLEET.md): the two-key form (its key space is not the one-key form's that the
  // schema's creation locks), "kwda" in ASCII and the schema's oid (unique in the database,
  // mapped onto int4). With it, the one-key claim of a kernelwatch that claimed the whole
  // database, shared: such an older daemon and this one refuse each other, whichever came first.
  Status take_claim() {
    ResultPtr result(
        PQexec(conn_.get(),
               "SELECT pg_try_advisory_lock_shared(8563983191375601006), (SELECT "
               "pg_try_advisory_lock(1802986593, (oid::bigint - 2147483648)::int4) FROM "
               "pg_catalog.pg_namespace WHERE nspname = current_schema())"));
    KW_TRY(check(result.get(), "claiming the database's schema"));
    const auto column = [&](int index) {
      return PQntuples(result.get()) == 1 ? std::string_view(PQgetvalue(result.get(), 0, index))
                                          : std::string_view();
    };
    if (column(0) != "t") {
      return core::fail(ErrorCode::Unavailable,
                        path().string() +
                            ": an older kernelwatch daemon, one that claims the whole database, "
                            "uses this database: stop it first (docs/FLEET.md)");
    }
    if (column(1).empty()) {
      return core::fail(ErrorCode::NotFound,
                        path().string() +
                            ": the session has no schema (its search_path names "
                            "none that exists)");
    }
    if (column(1) == "t") return {};
    return core::fail(ErrorCode::Unavailable,
                      path().string() +
                          ": another kernelwatch daemon uses this database's schema (one daemon "
                          "per schema: give each host its own storage.schema; docs/FLEET.md)");
  }

  std::unique_ptr<PGconn, ConnDeleter> conn_;
  OpenMode mode_;
  std::int64_t changes_ = 0;
  std::uint64_t statements_ = 0;
  std::uint64_t generation_ = 1;
  bool claimed_ = false;
  bool transaction_open_ = false;  // begun and not yet committed or rolled back
  bool needs_configure_ = false;
};

bool PgStatement::check_index(int index) {
  if (index >= 1 && index <= static_cast<int>(values_.size())) return true;
  if (!bind_error_) bind_error_ = db_->bind_failure(index, "the statement has no such parameter");
  return false;
}

void PgStatement::bind_text(int index, std::string_view value, bool) {
  if (!check_index(index)) return;
  if (value.find('\0') != std::string_view::npos) {
    // libpq passes text as C strings and PostgreSQL's text cannot hold a NUL byte.
    if (!bind_error_) {
      bind_error_ = db_->bind_failure(index, "text with a NUL byte cannot be stored in PostgreSQL");
      bind_error_->code = ErrorCode::ParseError;  // the input's fault: refused, never retried
    }
    return;
  }
  values_[index - 1] = std::string(value);
}

Result<bool> PgStatement::step() {
  if (bind_error_) return tl::unexpected(*bind_error_);
  if (!result_) {
    result_ = KW_TRY(db_->execute(*this, values_));
    row_ = -1;
  }
  ++row_;
  return row_ < PQntuples(result_.get());
}

}  // namespace

Result<std::unique_ptr<Database>> Database::open_postgresql(const std::string& conninfo,
                                                            std::string shown, OpenMode mode) {
  // Ours first, so that the caller's own connect_timeout or application_name wins.
  // Keepalives and a TCP user timeout: a partitioned network fails a statement within about a
  // minute instead of hanging the engine's thread.
  const char* keywords[] = {"connect_timeout",
                            "application_name",
                            "keepalives",
                            "keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            "tcp_user_timeout",
                            "dbname",
                            nullptr};
  const char* values[] = {"10",    "kernelwatch",    "1",    "15", "5", "3",
                          "45000", conninfo.c_str(), nullptr};
  PGconn* raw = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (raw == nullptr) return core::fail(ErrorCode::OutOfMemory, shown + ": cannot connect");
  auto db = std::make_unique<PgDatabase>(shown, raw, mode);
  if (PQstatus(raw) != CONNECTION_OK) {
    return core::fail(ErrorCode::Unavailable,
                      shown + ": cannot connect: " + trimmed(PQerrorMessage(raw)));
  }
  KW_TRY(db->configure());
  return std::unique_ptr<Database>(std::move(db));
}

Result<PostgresqlLocation> postgresql_location(std::string_view conninfo) {
  char* error = nullptr;
  const std::string text(conninfo);
  PQconninfoOption* options = PQconninfoParse(text.c_str(), &error);
  if (options == nullptr) {
    PQfreemem(error);
    // libpq's message quotes the text it could not read, which may be a password: not shown.
    return core::fail(ErrorCode::InvalidArgument,
                      "not a PostgreSQL connection string (libpq cannot parse it; check its "
                      "percent-encoding and spaces)");
  }
  PostgresqlLocation out;
  std::string host, port, dbname, service, options_text;
  for (auto* option = options; option->keyword != nullptr; ++option) {
    if (option->val == nullptr) continue;
    const std::string_view keyword = option->keyword;
    if ((keyword == "password" || keyword == "sslpassword") && *option->val != '\0') {
      out.has_password = true;
    }
    if (keyword == "host" || keyword == "hostaddr") host = option->val;
    if (keyword == "port") port = option->val;
    if (keyword == "dbname") dbname = option->val;
    if (keyword == "service") service = option->val;
    if (keyword == "options") options_text = option->val;
  }
  PQconninfoFree(options);
  if (!service.empty() && host.empty() && dbname.empty()) {
    out.shown = "postgresql service " + service;
  } else {
    out.shown = "postgresql://" + (host.empty() ? std::string("localhost") : host) +
                (port.empty() ? "" : ":" + port) + "/" + dbname;
  }
  // A host's own schema (storage.schema sets it so: "-csearch_path=NAME"): named, since each
  // daemon of a fleet has one; shown only when it is one plain name.
  for (const std::string_view prefix : {"-csearch_path=", "--search_path="}) {
    const auto at = options_text.find(prefix);
    if (at == std::string::npos || (at > 0 && options_text[at - 1] != ' ')) continue;
    const auto from = at + prefix.size();
    const auto end = options_text.find_first_of(" \t", from);
    const std::string schema =
        options_text.substr(from, end == std::string::npos ? end : end - from);
    const bool plain = !schema.empty() && schema.size() <= 63 &&
                       std::all_of(schema.begin(), schema.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                       });
    if (plain) out.shown += ", schema " + schema;
    break;
  }
  return out;
}

}  // namespace kernelwatch::storage
