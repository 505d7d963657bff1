// A database kernelwatch 0.1.0 made (schema version 6, records in its earlier forms; see
// tests/data/legacy-0.1.0/README.md) opened by this build: migrated to the public kernelindex
// forms with every run, key, alert and operator action kept.
#include <sqlite3.h>

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/key.hpp"
#include "storage/alerts.hpp"
#include "storage/connection.hpp"
#include "storage/importer.hpp"
#include "storage/run_store.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/conformance.hpp"
#include "tests/support/neighbours.hpp"

namespace kernelwatch::storage {
namespace {

using nlohmann::json;

std::filesystem::path legacy_dir() {
  return std::filesystem::path(KW_SOURCE_DIR) / "tests/data/legacy-0.1.0";
}

// Rows of a query as text, read with SQLite directly (independent of the store).
std::vector<std::vector<std::string>> rows(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::vector<std::string>> out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const auto* text = sqlite3_column_text(stmt, i);
      row.emplace_back(text == nullptr ? "NULL" : reinterpret_cast<const char*>(text));
    }
    out.push_back(std::move(row));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

class LegacyDatabase : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::copy_file(legacy_dir() / "kernelwatch-0.1.0.db", path_);
    ASSERT_EQ(testing::user_version(path_), 6);
    keys_before_ = rows(path_,
                        "SELECT k.digest, count(r.id) FROM keys k LEFT JOIN runs r "
                        "ON r.key_id = k.id GROUP BY k.id ORDER BY k.digest");
    alerts_before_ = rows(path_, "SELECT id, key_id, state, origin FROM alerts ORDER BY id");
    actions_before_ = rows(path_, "SELECT alert_id, action, at_ns FROM alert_actions ORDER BY id");
    runs_before_ = rows(path_,
                        "SELECT id, key_id, observed_at_ns, median_ns, p20_ns, p80_ns, "
                        "external_id FROM runs ORDER BY id");
  }

  kernelwatch::testing::TempDir dir_;
  std::filesystem::path path_ = dir_ / "kw.db";
  std::vector<std::vector<std::string>> keys_before_, alerts_before_, actions_before_, runs_before_;
};

TEST_F(LegacyDatabase, OpensMigratedWithEveryRunKeyAlertAndAcknowledgementKept) {
  {
    auto connection = Connection::open(path_, OpenMode::Existing);
    ASSERT_TRUE(connection) << connection.error().message;
  }
  EXPECT_EQ(testing::user_version(path_), kSchemaVersion);
  ASSERT_EQ(keys_before_.size(), 7u);
  EXPECT_EQ(rows(path_,
                 "SELECT k.digest, count(r.id) FROM keys k LEFT JOIN runs r ON r.key_id = k.id "
                 "GROUP BY k.id ORDER BY k.digest"),
            keys_before_);
  EXPECT_EQ(rows(path_, "SELECT id, key_id, state, origin FROM alerts ORDER BY id"),
            alerts_before_);
  EXPECT_EQ(rows(path_, "SELECT alert_id, action, at_ns FROM alert_actions ORDER BY id"),
            actions_before_);
  EXPECT_EQ(rows(path_,
                 "SELECT id, key_id, observed_at_ns, median_ns, p20_ns, p80_ns, external_id "
                 "FROM runs ORDER BY id"),
            runs_before_);
  // Statuses: the outcome a detector needs, and the public one of the record.
  EXPECT_EQ(
      rows(path_, "SELECT status, run_status, count(*) FROM runs GROUP BY 1, 2 ORDER BY 1, 2"),
      (std::vector<std::vector<std::string>>{{"failed", "runtime_error", "1"},
                                             {"inconclusive", "incomplete_evidence", "1"},
                                             {"passed", "passed", "35"}}));
}

TEST_F(LegacyDatabase, EveryMigratedRecordIsValidAndItsKeyIsTheOneItIsStoredUnder) {
  auto connection = Connection::open(path_, OpenMode::Existing);
  ASSERT_TRUE(connection) << connection.error().message;
  RunStore store(*connection);
  auto runs = store.runs({});
  ASSERT_TRUE(runs) << runs.error().message;
  ASSERT_EQ(runs->size(), 37u);
  json all = json::array();
  for (const auto& run : *runs) {
    const json record = core::to_json(run.record);
    for (const char* member : {"run", "protocol", "environment"}) {
      const auto valid = core::validate_document(record[member], member);
      EXPECT_TRUE(valid) << run.record.run.source_native.external_id << ": "
                         << valid.error().message;
    }
    EXPECT_EQ(record["run"]["spec"]["environmentDigest"],
              core::document_digest(record["environment"]));
    auto key = core::key_of(run.record);
    ASSERT_TRUE(key);
    EXPECT_EQ(key->digest(), run.key.digest()) << run.record.run.source_native.external_id;
    all.push_back(record);
  }
  KW_REQUIRE_JSONSCHEMA();
  const auto checked = kernelwatch::testing::check_against_schemas(all, dir_.path());
  EXPECT_TRUE(checked.valid) << checked.report;
}

TEST_F(LegacyDatabase, ReasonsAreKeptWhereTheReplayAndTheRecordReadThem) {
  auto connection = Connection::open(path_, OpenMode::Existing);
  ASSERT_TRUE(connection);
  RunStore store(*connection);
  std::map<core::RunStatus, std::string> reasons;
  ASSERT_TRUE(store.for_each_in_time_order([&](const RunSummary& run) -> core::Status {
    if (run.status != core::RunStatus::Passed) reasons[run.status] = run.status_reason;
    return {};
  }));
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_NE(reasons[core::RunStatus::RuntimeError].find("cannot import torch"), std::string::npos);
  EXPECT_EQ(reasons[core::RunStatus::IncompleteEvidence].rfind("SM clock 345 MHz", 0), 0u);
  // The software environment the replay compares for attribution is the upgraded one: no per-run
  // GPU sample in it any more.
  ASSERT_TRUE(store.for_each_in_time_order([&](const RunSummary& run) -> core::Status {
    EXPECT_FALSE(run.software.contains("before")) << run.external_id;
    EXPECT_FALSE(run.software.contains("host")) << run.external_id;
    return {};
  }));
}

// `history --json` of 0.1.0 imported into a new database: the same keys as the migrated one.
TEST_F(LegacyDatabase, AnExportOf010ImportsIntoTheKeysItHadThen) {
  const auto fresh = dir_ / "fresh.db";
  auto connection = Connection::open(fresh, OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::filesystem::path file = legacy_dir() / "history-0.1.0.json";
  auto report = import_files(*connection, std::span(&file, 1), InvalidPolicy::Abort);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->inserted, 37u);
  std::set<std::string> digests;
  for (const auto& row : keys_before_) digests.insert(row[0]);
  std::set<std::string> imported;
  for (const auto& row : rows(fresh, "SELECT digest FROM keys")) imported.insert(row[0]);
  EXPECT_EQ(imported, digests);
}

}  // namespace
}  // namespace kernelwatch::storage
