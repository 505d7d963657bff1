#include "tests/storage/storage_test_support.hpp"

#include <sqlite3.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "core/digest.hpp"
#include "storage/detail/record_layout.hpp"
#include "storage/run_store.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/postgres_server.hpp"

namespace kernelwatch::storage::testing {
namespace {

struct Db {
  explicit Db(const std::filesystem::path& path, int flags = SQLITE_OPEN_READONLY) {
    if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
      throw std::runtime_error("open " + path.string());
    }
  }
  ~Db() { sqlite3_close_v2(db); }
  std::vector<std::vector<std::string>> query(const std::string& sql) const {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error(sqlite3_errmsg(db));
    }
    std::vector<std::vector<std::string>> rows;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
        row.emplace_back(text ? text : "NULL");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(stmt);
    return rows;
  }
  sqlite3* db = nullptr;
};

}  // namespace

core::Record fixture_record(const char* name) {
  auto record = core::parse_record(
      nlohmann::json::parse(kernelwatch::testing::read_file(kernelwatch::testing::fixture(name))));
  EXPECT_TRUE(record) << name << ": " << record.error().message;
  return record ? std::move(*record) : core::Record{};
}

void FreshDatabase::SetUp() {
#if KW_STORAGE_ON_POSTGRESQL
  KW_REQUIRE_POSTGRES(server);
  location_ = server.create_database();
#endif
  auto opened = Connection::open(location_, OpenMode::Create);
  ASSERT_TRUE(opened) << opened.error().message;
  connection_.emplace(std::move(*opened));
}

std::string dump_database(const std::filesystem::path& path) {
  Db db(path);
  std::string out;
  for (const auto& table :
       db.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")) {
    out += "table " + table[0] + "\n";
    for (const auto& row : db.query("SELECT * FROM \"" + table[0] + "\" ORDER BY 1")) {
      for (const auto& cell : row) out += cell + "|";
      out += "\n";
    }
  }
  return out;
}

long long user_version(const std::filesystem::path& path) {
  return std::stoll(Db(path).query("PRAGMA user_version").at(0).at(0));
}

std::string pragma_text(const std::filesystem::path& path, const char* pragma) {
  return Db(path).query(std::string("PRAGMA ") + pragma).at(0).at(0);
}

void exec_sql(const std::filesystem::path& path, const std::string& sql) {
  Db db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  char* error = nullptr;
  if (sqlite3_exec(db.db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "?";
    sqlite3_free(error);
    throw std::runtime_error(message);
  }
}

void downgrade_runs_to_v7(const std::filesystem::path& path) {
  // The records and raw sources as version 7 stored them, read through this build.
  std::map<std::int64_t, std::string> records;
  {
    auto connection = Connection::open(path, OpenMode::Existing);
    ASSERT_TRUE(connection) << connection.error().message;
    auto runs = RunStore(*connection).runs({});
    ASSERT_TRUE(runs) << runs.error().message;
    for (const auto& run : *runs) records[run.id] = core::canonical_json(core::to_json(run.record));
  }
  std::map<std::int64_t, std::string> sources;
  {
    Db db(path);
    for (const auto& row :
         db.query("SELECT r.id, d.body, coalesce(r.source_values, '') FROM runs r JOIN documents d "
                  "ON d.id = r.source_template")) {
      auto joined = layout::join_source(nlohmann::json::parse(row[1]), row[2]);
      ASSERT_TRUE(joined) << joined.error().message;
      sources[std::stoll(row[0])] = joined->dump();
    }
  }
  // Version 9's table goes too: the migrations after 7 run again on the downgraded file.
  exec_sql(path, R"sql(
DROP TABLE IF EXISTS run_judgements;
DROP INDEX runs_by_time;
DROP INDEX runs_unsettled;
CREATE TABLE runs_v7 (
  id INTEGER PRIMARY KEY,
  key_id INTEGER NOT NULL REFERENCES keys(id),
  observed_at_ns INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'inconclusive')),
  median_ns INTEGER,
  p20_ns INTEGER,
  p80_ns INTEGER,
  implementation_id INTEGER REFERENCES implementations(id),
  external_id TEXT NOT NULL,
  record TEXT NOT NULL,
  raw_source TEXT,
  settled INTEGER,
  implementation_digest TEXT,
  software TEXT,
  status_reason TEXT,
  source TEXT,
  run_status TEXT,
  UNIQUE (key_id, observed_at_ns)
);
INSERT INTO runs_v7 SELECT id, key_id, observed_at_ns, status, median_ns, p20_ns, p80_ns,
  implementation_id, external_id, '{}', NULL, settled,
  CASE WHEN implementation_digest IS NULL
       THEN (SELECT digest FROM implementations i WHERE i.id = implementation_id)
       ELSE nullif(implementation_digest, '') END,
  NULL, status_reason, source, run_status FROM runs;
DROP TABLE runs;
DROP TABLE documents;
ALTER TABLE runs_v7 RENAME TO runs;
)sql");
  Db db(path, SQLITE_OPEN_READWRITE);
  sqlite3_stmt* update = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.db,
                               "UPDATE runs SET record = ?2, raw_source = ?3, "
                               "software = json_extract(?2, '$.environment.spec.software') "
                               "WHERE id = ?1",
                               -1, &update, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db.db);
  for (const auto& [id, record] : records) {
    sqlite3_bind_int64(update, 1, id);
    sqlite3_bind_text(update, 2, record.c_str(), -1, SQLITE_TRANSIENT);
    if (const auto it = sources.find(id); it != sources.end()) {
      sqlite3_bind_text(update, 3, it->second.c_str(), -1, SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(update, 3);
    }
    EXPECT_EQ(sqlite3_step(update), SQLITE_DONE) << sqlite3_errmsg(db.db);
    sqlite3_reset(update);
  }
  sqlite3_finalize(update);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db.db,
                         "CREATE INDEX runs_by_time ON runs (observed_at_ns, key_id);"
                         "CREATE INDEX runs_unsettled ON runs (key_id) WHERE settled = 0;"
                         "PRAGMA user_version = 7;",
                         nullptr, nullptr, &error),
            SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
}

}  // namespace kernelwatch::storage::testing
