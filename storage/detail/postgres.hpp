// Storage-private: what the PostgreSQL backend shares with the connection code (opening, the
// schema) and its tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace kernelwatch::storage {

class Database;

// A statement in SQLite's spelling as PostgreSQL reads it: `?N` -> `$N`; json_extract,
// json_valid and json_each -> the kw_json_* functions of the PostgreSQL schema; instr -> strpos;
// INDEXED BY hints dropped. Quoted text is left alone.
struct PostgresqlStatement {
  std::string text;
  std::vector<bool> parameters;  // parameters[i]: the text names $i+1 (a gap is declared text)
};
[[nodiscard]] PostgresqlStatement translate_to_postgresql(std::string_view sql);

struct PostgresqlLocation {
  std::string shown;  // "postgresql://host:port/db" or "postgresql service NAME": no password
  bool has_password = false;
};

// What a libpq connection string (a postgresql:// URL or key=value pairs) names, read with
// libpq's own parser.
[[nodiscard]] core::Result<PostgresqlLocation> postgresql_location(std::string_view conninfo);

// Creates kernelwatch's schema in an empty PostgreSQL database, or checks the version of the one
// there (migrating it when older); one transaction, under an advisory lock, so daemons starting
// together on one database create it once.
[[nodiscard]] core::Status prepare_postgresql_schema(Database& db, bool may_write);

}  // namespace kernelwatch::storage
