#include "runners/liger_csv.hpp"

#include <gtest/gtest.h>

#include "core/key.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using nlohmann::json;
using storage::ItemKind;
using storage::SourceItem;

const std::string kHeader =
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,"
    "x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,"
    "liger_version\n";
const std::string kTvdRow =
    "tvd,torch,backward,speed,ms,V,vocab size,65536,23.379840850830078,23.37938575744629,"
    "23.381267929077147,\"{\"\"B\"\": 8, \"\"T\"\": 2048}\",NVIDIA H100 80GB HBM3,2026-03-03 "
    "23:02:57,0.7.0\n";

TEST(CsvTest, QuotedFieldsCommasQuotesAndNewlines) {
  auto rows = parse_csv("a,b,c\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\r\nlast,,\n");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].fields, (std::vector<std::string>{"x,1", "say \"hi\"", "two\nlines"}));
  EXPECT_EQ((*rows)[1].line, 2u);
  EXPECT_EQ((*rows)[2].fields, (std::vector<std::string>{"last", "", ""}));
  EXPECT_EQ((*rows)[2].line, 4u);
}

TEST(CsvTest, UnterminatedQuoteNamesItsLine) {
  auto rows = parse_csv("a,b\n1,2\n3,\"open\n");
  ASSERT_FALSE(rows);
  EXPECT_EQ(rows.error().message, "3: unterminated quoted field");
}

TEST(LigerCsvTest, RowBecomesTheFixtureRecord) {
  auto items = read_liger_csv(kHeader + kTvdRow, "all.csv");
  ASSERT_TRUE(items) << items.error().message;
  ASSERT_EQ(items->size(), 1u);
  const SourceItem& item = items->front();
  ASSERT_EQ(item.kind, ItemKind::Run) << item.reason;
  EXPECT_EQ(item.line, 2u);
  const json expected = json::parse(testing::read_file(
      testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json")));
  const json actual = core::to_json(item.record);
  // Everything but the source-specific workload and implementation digests is the fixture's.
  json a = actual;
  json e = expected;
  for (json* doc : {&a, &e}) {
    (*doc)["run"]["spec"].erase("workloadDigest");
    (*doc)["run"]["spec"].erase("implementationDigest");
  }
  EXPECT_EQ(a, e) << json::diff(e, a).dump(1);
  EXPECT_EQ(*core::key_of(item.record)->digest().data(),
            *core::key_of(*core::parse_record(expected))->digest().data());
  EXPECT_EQ(core::key_of(item.record)->digest(),
            core::key_of(*core::parse_record(expected))->digest());
  const json raw = json::parse(item.raw);
  EXPECT_EQ(raw["file"], "all.csv");
  EXPECT_EQ(raw["line"], 2);
  EXPECT_EQ(raw["row"]["y_value_50"], "23.379840850830078");
}

TEST(LigerCsvTest, LayerNormWorkloadAndRounding) {
  const std::string row =
      "layer_norm,liger,backward,speed,ms,N,hidden "
      "size,16384,0.5776320099830627,0.5753471970558167,"
      "0.5798912048339844,\"{\"\"M\"\": 4096, \"\"dtype\"\": \"\"torch.float32\"\", \"\"eps\"\": "
      "1e-06}\","
      "NVIDIA H100 80GB HBM3,2025-07-17 18:18:16,0.6.0\n";
  auto items = read_liger_csv(kHeader + row, "x.csv");
  ASSERT_TRUE(items);
  ASSERT_EQ(items->front().kind, ItemKind::Run) << items->front().reason;
  const auto& run = items->front().record.run;
  EXPECT_EQ(run.median->count(), 577632);
  EXPECT_EQ(run.latency("p20")->count(), 575347);
  EXPECT_EQ(run.latency("p80")->count(), 579891);
  EXPECT_EQ(run.source_native.external_id,
            "layer_norm/backward/liger/nvidia-h100-80gb-hbm3/hidden16384-rows4096-fp32/"
            "2025-07-17-18-18-16");
  EXPECT_EQ(run.metadata.name,
            "liger-layer-norm-backward-liger-nvidia-h100-80gb-hbm3-hidden16384-rows4096-fp32-2025-"
            "07-17-18-18-16");
}

TEST(LigerCsvTest, MemoryRowsAreSkippedExtraColumnsIgnored) {
  const std::string header =
      kHeader.substr(0, kHeader.size() - 1) + ",ghpages_commit_dir,ghpages_order\n";
  const std::string speed = kTvdRow.substr(0, kTvdRow.size() - 1) + ",c1bdc24,1\n";
  const std::string memory =
      "tvd,torch,full,memory,MB,V,vocab size,4096,1024.0,1024.0,1024.0,\"{\"\"B\"\": 8, \"\"T\"\": "
      "2048}\","
      "NVIDIA H100 80GB HBM3,2026-03-03 23:02:57,0.7.0,c1bdc24,1\n";
  auto items = read_liger_csv(header + speed + memory, "weekly.csv");
  ASSERT_TRUE(items);
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].kind, ItemKind::Run);
  EXPECT_EQ((*items)[1].kind, ItemKind::Skipped);
  EXPECT_EQ((*items)[1].line, 3u);
}

struct BadRow {
  std::string from;
  std::string to;
  std::string reason;
};

TEST(LigerCsvTest, InvalidRowsSayWhy) {
  const BadRow cases[] = {
      {"23.379840850830078", "fast", "y_value_50 \"fast\" is not a positive number of ms"},
      {"23.379840850830078", "-1", "y_value_50 \"-1\" is not a positive number of ms"},
      {"{\"\"B\"\": 8, \"\"T\"\": 2048}",
       "{\"\"B\"\": 8, \"\"T\"\": 2048, \"\"dtype\"\": \"\"torch.float64\"\"}",
       "unknown dtype \"torch.float64\""},
      {"{\"\"B\"\": 8, \"\"T\"\": 2048}", "{\"\"B\"\": 8}", "B and T must be positive integers"},
      {"{\"\"B\"\": 8, \"\"T\"\": 2048}", "not json",
       "extra_benchmark_config_str is not a JSON object"},
      {"tvd,torch,backward", "my kernel,torch,backward",
       "kernel_name \"my kernel\" must be a name without spaces"},
      {"tvd,torch,backward", "tvd,Torch,backward", "kernel_provider \"Torch\" must be a lowercase"},
      {"tvd,torch,backward", "tvd,torch,sideways", "kernel_operation_mode \"sideways\""},
      {"speed", "power", "metric_name \"power\" is not speed or memory"},
      {"65536", "65536.5", "x_value \"65536.5\" is not a positive integer"},
      {"2026-03-03 23:02:57", "03/03/2026", "timestamp: timestamp \"03/03/2026\""},
      {"0.7.0\n", "0.7.0,extra\n", "expected 15 columns, got 16"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.to);
    std::string row = kTvdRow;
    const auto pos = row.find(c.from);
    ASSERT_NE(pos, std::string::npos);
    row.replace(pos, c.from.size(), c.to);
    auto items = read_liger_csv(kHeader + row, "bad.csv");
    ASSERT_TRUE(items);
    ASSERT_EQ(items->size(), 1u);
    EXPECT_EQ(items->front().kind, ItemKind::Invalid);
    EXPECT_NE(items->front().reason.find(c.reason), std::string::npos) << items->front().reason;
  }
}

TEST(LigerCsvTest, MissingColumnFailsTheFile) {
  std::string header = kHeader;
  header.replace(header.find("y_value_50,"), 11, "");
  auto items = read_liger_csv(header, "h.csv");
  ASSERT_FALSE(items);
  EXPECT_EQ(items.error().message, "1: missing column \"y_value_50\" in the header");
}

// Every speed row of any kernel Liger benchmarks becomes a run, with a workload label that says
// what was measured; TVD and LayerNorm rows keep kernelwatch's own workloads.
TEST(LigerCsvTest, AnyKernelsSpeedRowsImportWithReadableStableWorkloads) {
  const std::string rows =
      "cross_entropy,torch_compile,no-grad-forward,speed,ms,V,vocab size,4096,0.5,0.49,0.51,"
      "\"{\"\"B\"\": 8, \"\"T\"\": 2048}\",NVIDIA H100 80GB HBM3,2025-10-10 01:02:03,0.6.2\n"
      "distill_jsd_loss,liger,full,speed,ms,BT,B x T,1024,10.5,10.4,10.6,"
      "\"{\"\"mode\"\": \"\"forward\"\", \"\"H\"\": 4096, \"\"dtype\"\": \"\"torch.bfloat16\"\", "
      "\"\"bias\"\": false, \"\"ignore_index\"\": -100}\",NVIDIA H100 80GB HBM3,"
      "2025-10-10 01:02:04,0.6.2\n"
      "dyt_beta=False,liger,forward,speed,ms,hidden_size,hidden size,2048,0.02,0.019,0.021,"
      "\"{\"\"BT\"\": 4096, \"\"dtype\"\": \"\"torch.bfloat16\"\", \"\"beta\"\": false}\",NVIDIA "
      "H100 80GB "
      "HBM3,2025-10-10 01:02:05,0.6.2\n";
  auto items = read_liger_csv(kHeader + rows, "other.csv");
  ASSERT_TRUE(items) << items.error().message;
  ASSERT_EQ(items->size(), 3u);
  std::vector<std::string> labels;
  for (const auto& item : *items) {
    ASSERT_EQ(item.kind, ItemKind::Run) << item.reason;
    auto key = core::key_of(item.record);
    ASSERT_TRUE(key) << key.error().message;
    labels.push_back(key->benchmark.label + " " + key->provider.label + " " + key->workload.label);
  }
  EXPECT_EQ(labels[0], "cross_entropy/no-grad-forward torch_compile v4096-b8-t2048");
  EXPECT_EQ(labels[1],
            "distill_jsd_loss/full liger bt1024-bf16-bias_false-h4096-ignore_index_-100-"
            "mode_forward");
  EXPECT_EQ(labels[2], "dyt_beta=False/forward liger hidden_size2048-bf16-beta_false-bt4096");
  EXPECT_EQ(items->at(1).record.run.source_native.external_id,
            "distill_jsd_loss/full/liger/nvidia-h100-80gb-hbm3/"
            "bt1024-bf16-bias_false-h4096-ignore_index_-100-mode_forward/2025-10-10-01-02-04");
  // The label does not depend on the order the config's fields were written in.
  const std::string reordered =
      "cross_entropy,torch_compile,no-grad-forward,speed,ms,V,vocab size,4096,0.5,0.49,0.51,"
      "\"{\"\"T\"\": 2048, \"\"B\"\": 8}\",NVIDIA H100 80GB HBM3,2025-10-10 01:02:03,0.6.2\n";
  auto again = read_liger_csv(kHeader + reordered, "again.csv");
  ASSERT_TRUE(again && again->size() == 1u);
  EXPECT_EQ(core::key_of(again->front().record)->digest(),
            core::key_of(items->front().record)->digest());
}

// The runners add to a row's documents and parse them once (runners/liger_bench.cpp,
// liger_scripts.cpp): the documents must be exactly what the row's record writes back, so that
// parsing them once gives the record, digests and all, that the importer gives the same row.
TEST(LigerCsvTest, RowDocumentsAreTheRecordsOwnJson) {
  auto items = read_liger_rows(kHeader + kTvdRow);
  ASSERT_TRUE(items) << items.error().message;
  ASSERT_EQ(items->size(), 1u);
  LigerSpeedRow row = items->front().row;
  row.observed = core::parse_timestamp("2026-03-04T00:00:00Z").value();
  const auto documents = liger_speed_documents(row);
  ASSERT_TRUE(documents) << documents.error().message;
  const auto record = liger_speed_record(row);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(core::to_json(*record), *documents);
  const auto reparsed = core::parse_record(*documents);
  ASSERT_TRUE(reparsed);
  EXPECT_EQ(core::to_json(*reparsed), core::to_json(*record));
}

}  // namespace
}  // namespace kernelwatch::runners
