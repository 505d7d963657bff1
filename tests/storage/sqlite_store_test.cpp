#include "storage/sqlite_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "storage/detail/queries.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using kernelwatch::testing::fixture;
using kernelwatch::testing::read_file;
using kernelwatch::testing::TempDir;
using kernelwatch::testing::write_file;
using nlohmann::json;

constexpr const char* kTvdFixture = "tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json";
constexpr const char* kLayerNormFixture =
    "layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json";

core::Record load_fixture(const char* name) {
  auto record = core::parse_record(json::parse(read_file(fixture(name))));
  EXPECT_TRUE(record);
  return *record;
}

// A copy of the fixture observed `minutes` later with another median.
core::Record shifted(const core::Record& base, int minutes, std::int64_t median_ns) {
  core::Record r = base;
  r.run.observed_at += std::chrono::minutes{minutes};
  r.run.median = std::chrono::nanoseconds{median_ns};
  r.run.source_native.external_id =
      "tvd/backward/torch/nvidia-h100-80gb-hbm3/tokens16384-vocab65536-fp32/" +
      core::format_id_timestamp(r.run.observed_at);
  return r;
}

TEST(SqliteStoreTest, CreatesSchemaInWalMode) {
  TempDir dir;
  const auto path = dir / "kw.db";
  {
    auto store = SqliteStore::open(path, OpenMode::Create);
    ASSERT_TRUE(store) << store.error().message;
  }
  EXPECT_EQ(testing::user_version(path), kSchemaVersion);
  EXPECT_EQ(testing::pragma_text(path, "journal_mode"), "wal");
  // Reopening an up-to-date database runs no migration and keeps the data.
  auto again = SqliteStore::open(path, OpenMode::Existing);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again->run_count(), 0);
}

TEST(SqliteStoreTest, MissingFileIsNotCreatedUnlessAsked) {
  TempDir dir;
  for (OpenMode mode : {OpenMode::Existing, OpenMode::ReadOnly}) {
    auto store = SqliteStore::open(dir / "absent.db", mode);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, core::ErrorCode::NotFound);
    EXPECT_NE(store.error().message.find("absent.db: no such database"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "absent.db"));
  auto nested = SqliteStore::open(dir / "no-such-dir" / "kw.db", OpenMode::Create);
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("does not exist"), std::string::npos);
}

TEST(SqliteStoreTest, NotASqliteFileIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir / "notes.db";
  const std::string content = "these are my notes, not a database\n" + std::string(4096, 'x');
  write_file(path, content);
  for (OpenMode mode : {OpenMode::Create, OpenMode::Existing, OpenMode::ReadOnly}) {
    auto store = SqliteStore::open(path, mode);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, core::ErrorCode::NotADatabase);
    EXPECT_NE(store.error().message.find("notes.db: not a SQLite database"), std::string::npos)
        << store.error().message;
  }
  EXPECT_EQ(read_file(path), content);
  EXPECT_FALSE(std::filesystem::exists(dir / "notes.db-wal"));
}

TEST(SqliteStoreTest, ForeignSqliteDatabaseIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir / "other.db";
  testing::exec_sql(path,
                    "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos "
                    "VALUES (1, 'a');");
  const std::string before = read_file(path);
  auto store = SqliteStore::open(path, OpenMode::Create);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, core::ErrorCode::NotADatabase);
  EXPECT_NE(store.error().message.find("not kernelwatch's"), std::string::npos);
  EXPECT_EQ(read_file(path), before);
}

TEST(SqliteStoreTest, NewerSchemaIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir / "future.db";
  {
    auto store = SqliteStore::open(path, OpenMode::Create);
    ASSERT_TRUE(store);
    auto tx = store->begin();
    ASSERT_TRUE(store->insert_run(*tx, load_fixture(kTvdFixture), ""));
    ASSERT_TRUE(tx->commit());
  }
  testing::exec_sql(path, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  const std::string before = read_file(path);
  const std::string rows_before = testing::dump_database(path);
  for (OpenMode mode : {OpenMode::Create, OpenMode::Existing, OpenMode::ReadOnly}) {
    auto store = SqliteStore::open(path, mode);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, core::ErrorCode::VersionTooNew);
    EXPECT_NE(store.error().message.find("written by a newer kernelwatch (schema version " +
                                         std::to_string(kSchemaVersion + 1)),
              std::string::npos)
        << store.error().message;
  }
  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(testing::dump_database(path), rows_before);
}

TEST(SqliteStoreTest, SameRunIsStoredOnce) {
  TempDir dir;
  auto store = SqliteStore::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(store);
  const core::Record record = load_fixture(kTvdFixture);
  auto tx = store->begin();
  ASSERT_TRUE(tx);
  EXPECT_EQ(*store->insert_run(*tx, record, ""), InsertOutcome::Inserted);
  EXPECT_EQ(*store->insert_run(*tx, record, ""), InsertOutcome::Duplicate);
  // Another name for the same run is still the same run: identity is key + observedAt.
  core::Record renamed = record;
  renamed.run.metadata.name = "renamed";
  EXPECT_EQ(*store->insert_run(*tx, renamed, ""), InsertOutcome::Duplicate);
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(*store->run_count(), 1);
}

TEST(SqliteStoreTest, UncommittedTransactionRollsBack) {
  TempDir dir;
  auto store = SqliteStore::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(store);
  {
    auto tx = store->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(store->insert_run(*tx, load_fixture(kTvdFixture), ""));
  }
  EXPECT_EQ(*store->run_count(), 0);
  EXPECT_EQ(testing::dump_database(store->path()).find("tokens16384"), std::string::npos);
}

TEST(SqliteStoreTest, StoredRecordRoundTripsAndAliasesResolve) {
  TempDir dir;
  auto store = SqliteStore::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(store);
  const json original = json::parse(read_file(fixture(kLayerNormFixture)));
  auto tx = store->begin();
  ASSERT_TRUE(store->insert_run(*tx, *core::parse_record(original), ""));
  ASSERT_TRUE(tx->commit());
  auto runs = store->runs({});
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(core::to_json(runs->front().record), original);
  EXPECT_EQ(runs->front().implementation_version, "0.6.0");
  EXPECT_EQ(runs->front().key.workload.label, "hidden16384-rows4096-fp32");
  // The fixture's own workload digest is kernelindex's; it is kept as an alias of ours.
  const std::string source_digest = original["run"]["spec"]["workloadDigest"];
  EXPECT_EQ(*store->resolve_alias(source_digest), runs->front().key.workload.digest);
  EXPECT_EQ(*store->resolve_alias("sha256:unknown"), "");
}

TEST(SqliteStoreTest, NewestRunsAreNewestFirstWhateverTheInsertOrder) {
  TempDir dir;
  auto store = SqliteStore::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(store);
  const core::Record base = load_fixture(kTvdFixture);
  std::vector<int> minutes(40);
  for (int i = 0; i < 40; ++i) minutes[static_cast<std::size_t>(i)] = i;
  std::shuffle(minutes.begin(), minutes.end(), std::mt19937(7));
  auto tx = store->begin();
  for (int m : minutes) ASSERT_TRUE(store->insert_run(*tx, shifted(base, m, 1000 + m), ""));
  ASSERT_TRUE(tx->commit());

  auto keys = store->keys();
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->size(), 1u);
  EXPECT_EQ(keys->front().run_count, 40);
  auto newest = store->newest_runs(keys->front().id, 5);
  ASSERT_TRUE(newest);
  ASSERT_EQ(newest->size(), 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ((*newest)[static_cast<std::size_t>(i)].record.run.median->count(), 1039 - i);
  auto history = store->key_history(keys->front().id);
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 40u);
  EXPECT_TRUE(std::is_sorted(history->begin(), history->end(), [](const auto& a, const auto& b) {
    return a.record.run.observed_at < b.record.run.observed_at;
  }));
}

TEST(SqliteStoreTest, NewestRunsQueryWalksTheIndexWithoutScanOrSort) {
  TempDir dir;
  const auto path = dir / "kw.db";
  ASSERT_TRUE(SqliteStore::open(path, OpenMode::Create));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = std::string("EXPLAIN QUERY PLAN ") + queries::kNewestRunIds;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  std::string plan;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    plan += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
    plan += "\n";
  }
  sqlite3_finalize(stmt);
  sqlite3_close_v2(db);
  EXPECT_NE(plan.find("SEARCH runs USING COVERING INDEX"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("SCAN"), std::string::npos) << plan;
}

}  // namespace
}  // namespace kernelwatch::storage
