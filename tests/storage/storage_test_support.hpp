// Helpers for storage tests: a logical dump of a database (every row of every table) read
// through SQLite directly, so "unchanged" is checked row for row, independent of the store;
// the founding kernelindex fixtures as records; and a fresh database to test a store on.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/record.hpp"
#include "storage/connection.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage::testing {

inline constexpr const char* kTvdFixture =
    "tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json";
inline constexpr const char* kLayerNormFixture =
    "layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json";

// A fixture of data/kernelindex/ parsed into a record (the test fails when it does not parse).
[[nodiscard]] core::Record fixture_record(const char* name);

// A new kernelwatch database open as connection_ for each test: dir_ / "kw.db", or where the
// tests are built with KW_STORAGE_ON_POSTGRESQL=1 (the storage_postgresql_test binary: the same
// store tests on PostgreSQL) a new database on the test process's real PostgreSQL server
// (tests/support/postgres_server.hpp). Fixtures of a store derive from it and build their store
// on connection_ after FreshDatabase::SetUp(); location() opens it again.
class FreshDatabase : public ::testing::Test {
 protected:
  void SetUp() override;
  [[nodiscard]] const std::filesystem::path& location() const { return location_; }

  kernelwatch::testing::TempDir dir_;
  std::filesystem::path location_ = dir_ / "kw.db";
  std::optional<Connection> connection_;
};

// Where a test reads the SQLite file itself (its schema, pragmas, query plans), it is compiled
// only into the SQLite binary: #if !KW_STORAGE_ON_POSTGRESQL.
#ifndef KW_STORAGE_ON_POSTGRESQL
#define KW_STORAGE_ON_POSTGRESQL 0
#endif

[[nodiscard]] std::string dump_database(const std::filesystem::path& path);
[[nodiscard]] long long user_version(const std::filesystem::path& path);
[[nodiscard]] std::string pragma_text(const std::filesystem::path& path, const char* pragma);
void exec_sql(const std::filesystem::path& path, const std::string& sql);

// Turns the runs table of a database of this build's schema into the one schema version 7 had:
// each record whole in `record` (as version 7 wrote it: the canonical JSON of core::to_json),
// each Liger row's raw source whole, the replay columns filled as version 7 filled them, no
// `documents`, no `run_judgements` (version 9); user_version 7. For migration tests.
void downgrade_runs_to_v7(const std::filesystem::path& path);

}  // namespace kernelwatch::storage::testing
