// Schema version 8 (issue #26) through the real binary: what `kernelwatch history --json` prints
// of a database is byte for byte what it printed before the database was migrated, both for the
// database kernelwatch 0.1.0 wrote (through versions 7 and 8, against the output of the version-7
// build, tests/data/legacy-0.1.0/history-v7.json) and for a database of every kind of record
// this build stores, taken back to version 7's layout and opened again.
#include <sqlite3.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "storage/connection.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using kernelwatch::testing::read_file;
using kernelwatch::testing::run_kernelwatch;
using kernelwatch::testing::TempDir;
using kernelwatch::testing::write_file;
using nlohmann::json;
namespace fs = std::filesystem;

fs::path source(const std::string& relative) {
  return fs::path(KW_SOURCE_DIR) / relative;
}

long long count(const fs::path& db, const char* sql) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(raw, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
  const long long n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  return n;
}

std::string history(const fs::path& db) {
  const auto r = run_kernelwatch({"history", "--db", db.string(), "--json", "--limit", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

TEST(MigrationE2E, TheLegacyDatabasePrintsWhatTheVersion7BuildPrinted) {
  TempDir dir;
  const auto db = dir / "kw.db";
  fs::copy_file(source("tests/data/legacy-0.1.0/kernelwatch-0.1.0.db"), db);
  const std::string printed = history(db);
  EXPECT_EQ(testing::user_version(db), kSchemaVersion);
  EXPECT_EQ(printed, read_file(source("tests/data/legacy-0.1.0/history-v7.json")));
  // Every run was split: none kept whole, and the documents runs share are stored once.
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs"), 37);
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs WHERE record IS NOT NULL"), 0);
  EXPECT_LT(count(db, "SELECT count(*) FROM documents"), 37);
  EXPECT_EQ(count(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'runs_v7'"), 0);
}

// A failed run as a kernelindex tool exports it: a public status, a reason, no timing.
std::string failed_record() {
  json record = json::parse(read_file(kernelwatch::testing::fixture(testing::kTvdFixture)));
  json& run = record["run"];
  run["spec"]["status"] = "runtime_error";
  run["spec"].erase("timing");
  run["spec"].erase("measurements");
  run["spec"]["observedAt"] = "2025-01-02T03:04:05.000Z";
  run["spec"]["sourceNative"]["externalId"] =
      "tvd/backward/torch/nvidia-h100-80gb-hbm3/tokens16384-vocab65536-fp32/2025-01-02-03-04-05";
  run["metadata"]["name"] = "a-failed-run";
  run["metadata"]["description"] = "runner exited with status 1: CUDA error: illegal address";
  return record.dump();
}

std::string examples_as_jsonl() {
  std::string out;
  for (const char* name : {"benchmark-run.json", "workload-case.json", "benchmark-protocol.json",
                           "implementation-revision.json", "execution-environment.json"}) {
    out += json::parse(read_file(source("third_party/kernelindex/examples/") / name)).dump() + "\n";
  }
  return out;
}

TEST(MigrationE2E, EveryKindOfRecordPrintsTheSameAfterAMigrationFromVersion7) {
  TempDir dir;
  const auto db = dir / "kw.db";
  write_file(dir / "examples.jsonl", examples_as_jsonl());
  write_file(dir / "failed.json", failed_record());
  const auto imported = run_kernelwatch(
      {"import", "--db", db.string(), kernelwatch::testing::fixture(testing::kTvdFixture).string(),
       kernelwatch::testing::fixture(testing::kLayerNormFixture).string(),
       kernelwatch::testing::liger_csv("all_benchmark_data.tvd_layer_norm.csv").string(),
       (dir / "examples.jsonl").string(), (dir / "failed.json").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto bench =
      run_kernelwatch({"bench", "--kernel", "layer_norm", "--pass", "forward", "--provider",
                       "kernelwatch-fused", "--backend", "cpu", "--rows", "8", "--hidden", "64",
                       "--warmup-ms", "1", "--rep-ms", "1", "--db", db.string()});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const std::string before = history(db);
  const auto backtest_before = run_kernelwatch({"backtest", "--db", db.string(), "--json"});
  ASSERT_EQ(backtest_before.exit_code, 0) << backtest_before.err;
  ASSERT_GT(json::parse(before).size(), 80u);

  testing::downgrade_runs_to_v7(db);
  ASSERT_EQ(testing::user_version(db), 7);
  ASSERT_GT(count(db, "SELECT count(*) FROM runs WHERE raw_source IS NOT NULL"), 50);
  EXPECT_EQ(history(db), before);
  EXPECT_EQ(testing::user_version(db), kSchemaVersion);
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs WHERE record IS NOT NULL"), 0);
  const auto backtest_after = run_kernelwatch({"backtest", "--db", db.string(), "--json"});
  EXPECT_EQ(backtest_after.out, backtest_before.out);
}

TEST(MigrationE2E, AnEmptyHistoryIsAnEmptyArray) {
  TempDir dir;
  const auto db = dir / "kw.db";
  ASSERT_TRUE(Connection::open(db, OpenMode::Create));
  EXPECT_EQ(history(db), json::array().dump(2) + "\n");
}

}  // namespace
}  // namespace kernelwatch::storage
