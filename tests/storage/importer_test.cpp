#include "storage/importer.hpp"

#include <zlib.h>

#include <map>

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "runners/liger_import.hpp"
#include "storage/run_store.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using kernelwatch::testing::fixture;
using kernelwatch::testing::liger_csv;
using kernelwatch::testing::read_file;
using kernelwatch::testing::TempDir;
using kernelwatch::testing::write_file;
using nlohmann::json;
namespace fs = std::filesystem;

// The import as `kernelwatch import` wires it: a Liger CSV read by runners/.
Result<ImportReport> import_with_liger(Connection& connection, std::span<const fs::path> paths,
                                       InvalidPolicy policy) {
  return import_files(connection, paths, policy, &runners::liger_csv_reader());
}

const fs::path kTvd = fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json");
const fs::path kLayerNorm =
    fixture("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json");
const fs::path kAll = liger_csv("all_benchmark_data.tvd_layer_norm.csv");
const fs::path kWeekly = liger_csv("weekly_ci.tvd_layer_norm.csv");

// Counts data rows whose metric_name column is `metric`, by a scan independent of the importer.
std::size_t count_rows(const fs::path& csv, const std::string& metric) {
  const std::string text = read_file(csv);
  std::size_t count = 0;
  for (std::size_t pos = text.find('\n'); pos != std::string::npos;
       pos = text.find('\n', pos + 1)) {
    const std::size_t end = text.find('\n', pos + 1);
    const std::string line =
        text.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
    if (line.find("," + metric + ",") != std::string::npos) ++count;
  }
  return count;
}

TEST(ImporterTest, SharedDataImportsWithFixturesStoredOnce) {
  TempDir dir;
  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> paths = {kTvd, kLayerNorm, kAll, kWeekly};
  auto report = import_with_liger(*connection, paths, InvalidPolicy::Abort);
  ASSERT_TRUE(report) << report.error().message;
  const std::size_t speed = count_rows(kAll, "speed") + count_rows(kWeekly, "speed");
  const std::size_t memory = count_rows(kAll, "memory") + count_rows(kWeekly, "memory");
  EXPECT_EQ(report->read, 2 + 118 + 2904u);
  EXPECT_EQ(report->memory_rows, memory);
  EXPECT_EQ(report->skipped, memory);
  EXPECT_EQ(report->duplicates, 2u);  // both fixtures are also CSV rows
  EXPECT_EQ(report->inserted, 2 + speed - 2);
  EXPECT_TRUE(report->invalid.empty());
  EXPECT_EQ(*RunStore(*connection).run_count(), static_cast<std::int64_t>(report->inserted));

  RunFilter filter{"tvd/backward", "torch", "tokens16384-vocab65536-fp32", "nvidia-h100-80gb-hbm3",
                   0};
  auto runs = RunStore(*connection).runs(filter);
  ASSERT_TRUE(runs);
  int matches = 0;
  for (const auto& run : *runs) {
    if (run.record.run.source_native.external_id ==
        "tvd/backward/torch/nvidia-h100-80gb-hbm3/tokens16384-vocab65536-fp32/"
        "2026-03-03-23-02-57") {
      ++matches;
      EXPECT_EQ(run.record.run.median->count(), 23379841);
      EXPECT_EQ(run.record.run.latency("p20")->count(), 23379386);
      EXPECT_EQ(run.record.run.latency("p80")->count(), 23381268);
    }
  }
  EXPECT_EQ(matches, 1);

  // Importing it all again adds nothing.
  auto again = import_with_liger(*connection, paths, InvalidPolicy::Abort);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->inserted, 0u);
  EXPECT_EQ(again->duplicates, report->inserted + 2);
}

TEST(ImporterTest, CsvFirstThenFixtureIsADuplicate) {
  TempDir dir;
  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> csv = {kAll};
  ASSERT_TRUE(import_with_liger(*connection, csv, InvalidPolicy::Abort));
  const std::vector<fs::path> fixtures = {kTvd, kLayerNorm};
  auto report = import_with_liger(*connection, fixtures, InvalidPolicy::Abort);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->inserted, 0u);
  EXPECT_EQ(report->duplicates, 2u);
}

struct BadFile {
  const char* name;
  std::string content;
  std::string expected;  // the error must contain "<file>:<expected>"
};

TEST(ImporterTest, EveryBadInputAbortsWithFileLineAndChangesNothing) {
  TempDir dir;
  const auto db = dir / "kw.db";
  {
    auto connection = Connection::open(db, OpenMode::Create);
    ASSERT_TRUE(connection);
    const std::vector<fs::path> seed = {kLayerNorm};
    ASSERT_TRUE(import_with_liger(*connection, seed, InvalidPolicy::Abort));
  }
  const std::string before = testing::dump_database(db);

  const std::string fixture_text = read_file(kTvd);
  const std::string csv = read_file(kAll);
  const std::string header = csv.substr(0, csv.find('\n') + 1);
  const std::string first_row =
      csv.substr(header.size(), csv.find('\n', header.size()) - header.size() + 1);
  json bad_median = json::parse(fixture_text);
  bad_median["run"]["spec"]["timing"]["latencyNs"]["median"] = "n/a";
  std::string unknown_dtype = first_row;
  unknown_dtype.replace(unknown_dtype.find("torch.float32"), 13, "torch.float8");
  std::string non_numeric = first_row;
  non_numeric.replace(non_numeric.find("0.030271999537944794"), 20, "abc");

  const BadFile cases[] = {
      {"truncated.json", fixture_text.substr(0, 700), "truncated.json:"},
      {"bad-median.json", "[\n" + bad_median.dump() + "\n]\n",
       "bad-median.json:2: run.spec.timing.latencyNs.median: matches none of its allowed forms"},
      {"columns.csv", header + first_row + "layer_norm,liger,forward\n",
       "columns.csv:3: expected 15 columns, got 3"},
      {"median.csv", header + first_row + non_numeric,
       "median.csv:3: y_value_50 \"abc\" is not a positive number of ms"},
      {"dtype.csv", header + unknown_dtype,
       "dtype.csv:2: extra_benchmark_config_str: unknown dtype \"torch.float8\""},
      {"header.csv", "kernel_name,x\n", "header.csv: 1: missing column \"kernel_provider\""},
      {"quote.csv", header + "layer_norm,\"open\n", "quote.csv: 2: unterminated quoted field"},
      {"lines.jsonl", json::parse(fixture_text).dump() + "\n{\"run\": 1}\n",
       "lines.jsonl:2: run: expected a kernelindex document (an object)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto path = dir / c.name;
    write_file(path, c.content);
    auto connection = Connection::open(db, OpenMode::Existing);
    ASSERT_TRUE(connection);
    // A good file before the bad one: its runs must not be stored either.
    const std::vector<fs::path> paths = {kTvd, path};
    auto report = import_with_liger(*connection, paths, InvalidPolicy::Abort);
    ASSERT_FALSE(report);
    const std::string expected = (dir / "").string() + c.expected;
    EXPECT_NE(report.error().message.find(expected), std::string::npos)
        << report.error().message << "\nexpected: " << expected;
    EXPECT_EQ(testing::dump_database(db), before);
  }
}

TEST(ImporterTest, SkipInvalidImportsTheRestAndListsWhatItSkipped) {
  TempDir dir;
  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::string csv = read_file(kAll);
  const std::string header = csv.substr(0, csv.find('\n') + 1);
  const std::string first_row =
      csv.substr(header.size(), csv.find('\n', header.size()) - header.size() + 1);
  write_file(dir / "mixed.csv", header + "broken,row\n" + first_row);
  const std::vector<fs::path> paths = {dir / "mixed.csv", kTvd};
  auto report = import_with_liger(*connection, paths, InvalidPolicy::Skip);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->inserted, 2u);
  EXPECT_EQ(report->skipped, 1u);
  ASSERT_EQ(report->invalid.size(), 1u);
  EXPECT_EQ(report->invalid[0], (dir / "mixed.csv").string() + ":2: expected 15 columns, got 2");
}

TEST(ImporterTest, UnreadableInputIsAnError) {
  TempDir dir;
  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> missing = {dir / "nope.json"};
  auto report = import_with_liger(*connection, missing, InvalidPolicy::Skip);
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("nope.json: cannot open for reading"), std::string::npos);
  const std::vector<fs::path> directory = {dir.path()};
  EXPECT_FALSE(import_with_liger(*connection, directory, InvalidPolicy::Abort));
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

void gzip_file(const fs::path& from, const fs::path& to) {
  const std::string text = read_file(from);
  gzFile out = gzopen(to.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
}

TEST(ImporterTest, AGzippedCsvIsReadAsItIsDecompressedIntoTheSameRuns) {
  TempDir dir;
  gzip_file(kWeekly, dir / "weekly.csv.gz");
  std::map<std::string, std::string> plain;
  std::map<std::string, std::string> packed;
  for (auto [file, out] : {std::pair{kWeekly, &plain}, std::pair{dir / "weekly.csv.gz", &packed}}) {
    auto connection = Connection::open(dir / (file.filename().string() + ".db"), OpenMode::Create);
    ASSERT_TRUE(connection);
    const std::vector<fs::path> paths = {file};
    auto report = import_with_liger(*connection, paths, InvalidPolicy::Abort);
    ASSERT_TRUE(report) << report.error().message;
    *out = emitted(*connection);
  }
  EXPECT_EQ(packed.size(), plain.size());
  EXPECT_EQ(packed, plain);
  // Cut short, it is refused naming the file, and nothing is stored.
  const std::string whole = read_file(dir / "weekly.csv.gz");
  write_file(dir / "cut.csv.gz", whole.substr(0, whole.size() / 2));
  auto connection = Connection::open(dir / "cut.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> cut = {dir / "cut.csv.gz"};
  auto report = import_with_liger(*connection, cut, InvalidPolicy::Skip);
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("cut.csv.gz: not a complete gzip file"), std::string::npos)
      << report.error().message;
  EXPECT_EQ(*RunStore(*connection).run_count(), 0);
}

// A kernelindex tool's separate documents in any order: runs before their documents are read
// again once every document is known (a second pass); the result is the same as documents first.
TEST(ImporterTest, RunsBeforeTheirDocumentsImportAsWhenTheDocumentsComeFirst) {
  TempDir dir;
  const auto example = [](const char* name) {
    return json::parse(
               read_file(fs::path(KW_SOURCE_DIR) / "third_party/kernelindex/examples" / name))
        .dump();
  };
  const std::string run = example("benchmark-run.json");
  std::string documents;
  for (const char* name : {"workload-case.json", "benchmark-protocol.json",
                           "implementation-revision.json", "execution-environment.json"}) {
    documents += example(name) + "\n";
  }
  write_file(dir / "first.jsonl", documents + run + "\n");
  write_file(dir / "last.jsonl", run + "\n\n" + documents);
  std::map<std::string, std::string> results[2];
  int i = 0;
  for (const char* name : {"first.jsonl", "last.jsonl"}) {
    auto connection = Connection::open(dir / (std::string(name) + ".db"), OpenMode::Create);
    ASSERT_TRUE(connection);
    const std::vector<fs::path> paths = {dir / name};
    auto report = import_with_liger(*connection, paths, InvalidPolicy::Abort);
    ASSERT_TRUE(report) << name << ": " << report.error().message;
    EXPECT_EQ(report->read, 1u) << name;
    EXPECT_EQ(report->inserted, 1u) << name;
    results[i++] = emitted(*connection);
  }
  EXPECT_EQ(results[0], results[1]);
  ASSERT_EQ(results[0].size(), 1u);
  // A document the run names that never comes is still reported at the run's line.
  write_file(dir / "missing.jsonl", run + "\n" + example("workload-case.json") + "\n");
  auto connection = Connection::open(dir / "missing.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> missing = {dir / "missing.jsonl"};
  auto report = import_with_liger(*connection, missing, InvalidPolicy::Abort);
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("missing.jsonl:1: spec.environmentDigest: the "
                                        "ExecutionEnvironment"),
            std::string::npos)
      << report.error().message;
}

// Read as it is stored, a CSV found bad at its end (an unterminated quote) has rows stored
// already: on --skip-invalid they go back out with the file, and the next file still imports.
TEST(ImporterTest, ACsvFoundBadAtItsEndIsSkippedWholeWithTheRowsStoredBeforeIt) {
  TempDir dir;
  const std::string csv = read_file(kAll);
  write_file(dir / "open.csv", csv + "layer_norm,\"never closed\n");
  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  const std::vector<fs::path> paths = {dir / "open.csv", kTvd};
  auto report = import_with_liger(*connection, paths, InvalidPolicy::Skip);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->inserted, 1u);
  EXPECT_EQ(report->read, 1u);
  EXPECT_EQ(report->skipped, 1u);
  ASSERT_EQ(report->invalid.size(), 1u);
  EXPECT_NE(report->invalid[0].find("open.csv:"), std::string::npos) << report->invalid[0];
  EXPECT_NE(report->invalid[0].find("unterminated quoted field"), std::string::npos);
  EXPECT_EQ(*RunStore(*connection).run_count(), 1);
}

}  // namespace
}  // namespace kernelwatch::storage
