// The import of Liger CSV files (runners/liger_import.hpp) through storage's importer: the fast
// way stores exactly what the slow way would (moved here from tests/storage/importer_test.cpp with
// the reader, #38 item 1).
#include "runners/liger_import.hpp"

#include <sqlite3.h>

#include <map>

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "runners/liger_csv.hpp"
#include "storage/detail/record_layout.hpp"
#include "storage/importer.hpp"
#include "storage/run_store.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using kernelwatch::testing::liger_csv;
using kernelwatch::testing::read_file;
using kernelwatch::testing::TempDir;
using kernelwatch::testing::write_file;
using nlohmann::json;
using storage::Connection;
using storage::ImportReport;
using storage::InvalidPolicy;
using storage::ItemKind;
using storage::OpenMode;
using storage::RunStore;
namespace fs = std::filesystem;
namespace layout = storage::layout;

const fs::path kWeekly = liger_csv("weekly_ci.tvd_layer_norm.csv");

core::Result<ImportReport> import_with_liger(Connection& connection,
                                             std::span<const fs::path> paths,
                                             InvalidPolicy policy) {
  return storage::import_files(connection, paths, policy, &liger_csv_reader());
}

// The emitted record of every stored run, by externalId.
std::map<std::string, std::string> emitted(Connection& connection) {
  std::map<std::string, std::string> out;
  auto runs = RunStore(connection).runs({});
  EXPECT_TRUE(runs) << runs.error().message;
  if (!runs) return out;
  for (const auto& run : *runs) {
    out.emplace(run.record.run.source_native.external_id, core::to_json(run.record).dump(2));
  }
  return out;
}

// Most rows of a Liger CSV are stored the fast way (no record built); every one of them must be
// stored as exactly the record, and the raw source, that read_liger_csv makes of its row.
TEST(LigerImportTest, TheFastWayStoresWhatTheRowsRecordAndSourceAre) {
  TempDir dir;
  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> paths = {kWeekly};
  auto report = import_with_liger(*connection, paths, InvalidPolicy::Abort);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_GT(report->derived, report->inserted / 2) << "the fast way was not taken";

  auto items = read_liger_csv(read_file(kWeekly), kWeekly.filename().string());
  ASSERT_TRUE(items);
  std::map<std::string, std::string> expected;
  std::map<std::string, std::string> expected_source;
  for (const auto& item : *items) {
    if (item.kind != ItemKind::Run) continue;
    const std::string id = item.record.run.source_native.external_id;
    expected.emplace(id, core::to_json(item.record).dump(2));
    expected_source.emplace(id, item.raw);
  }
  const auto stored = emitted(*connection);
  ASSERT_EQ(stored.size(), expected.size());
  EXPECT_EQ(stored.size(), report->inserted);
  for (const auto& [id, text] : stored) {
    ASSERT_TRUE(expected.contains(id)) << id;
    EXPECT_EQ(text, expected[id]) << id;
  }
  // The raw sources, put back together from their templates and values.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir / "kw.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT r.external_id, d.body, r.source_values FROM runs r "
                               "JOIN documents d ON d.id = r.source_template",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  std::size_t sources = 0;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    const std::string id = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const auto joined = layout::join_source(
        json::parse(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1))),
        reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2)));
    ASSERT_TRUE(joined) << id;
    EXPECT_EQ(core::canonical_json(*joined), expected_source[id]) << id;
    ++sources;
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  EXPECT_EQ(sources, stored.size());
}

// The Liger version is a row's own text in its record: a later row of a key whose version the
// schemas refuse (a label over 200 characters) is invalid, as read_liger_csv finds it, not stored
// the fast way from its key's first row.
TEST(LigerImportTest, ALaterRowWithAVersionTheSchemasRefuseIsInvalidAsReadLigerCsvSaysIt) {
  TempDir dir;
  const std::string header =
      "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,"
      "x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,"
      "liger_version\n";
  const auto row = [](const std::string& time, const std::string& version) {
    return "layer_norm,liger,forward,speed,ms,N,hidden size,1024,0.0302,0.0292,0.0314,"
           "\"{\"\"M\"\": 4096, \"\"dtype\"\": \"\"torch.float32\"\"}\",NVIDIA H100 80GB HBM3," +
           time + "," + version + "\n";
  };
  const std::string csv = header + row("2024-09-03 15:39:14", "0.2.1") +
                          row("2024-09-04 15:39:14", "0.2.1") +
                          row("2024-09-05 15:39:14", std::string(201, '9'));
  write_file(dir / "long.csv", csv);
  auto expected = read_liger_csv(csv, "long.csv");
  ASSERT_TRUE(expected);
  ASSERT_EQ(expected->size(), 3u);
  ASSERT_EQ((*expected)[0].kind, ItemKind::Run);
  ASSERT_EQ((*expected)[2].kind, ItemKind::Invalid) << "the schemas took a 201-character label";

  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> paths = {dir / "long.csv"};
  auto report = import_with_liger(*connection, paths, InvalidPolicy::Skip);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->inserted, 2u);
  EXPECT_EQ(report->derived, 1u) << "the second row is the one the fast way stores";
  ASSERT_EQ(report->invalid.size(), 1u);
  EXPECT_EQ(report->invalid[0], (dir / "long.csv").string() + ":4: " + (*expected)[2].reason);
  EXPECT_EQ(*RunStore(*connection).run_count(), 2);
}

}  // namespace
}  // namespace kernelwatch::runners
