// The output formats of `command` entries, read from outputs written the way each producer
// writes them: Google Benchmark 1.7's JSON reporter (src/json_reporter.cc), nvbench's --json
// (nvbench/json_printer.cu: every value a string, times in seconds), pytest-benchmark 3.2's
// --benchmark-json (stats.py: seconds, raw rounds in stats.data) and Liger-Kernel's CSV. The
// nvbench outputs are fixtures written from its printer (nvbench needs a GPU); real Google
// Benchmark and pytest-benchmark programs run in tests/daemon/command_e2e_test.cpp.
#include "runners/formats.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <string>

#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using nlohmann::json;

// A day before now in a producer's own date form (strftime): the outputs the tests parse are
// dated like a real run's, whatever day the suite runs on.
std::string day_before_now(const char* form) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() -
                                                             std::chrono::hours(24));
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[64];
  return std::string(text, std::strftime(text, sizeof text, form, &utc));
}

std::optional<double> statistic(const NativeResult& r, const std::string& name) {
  for (const auto& s : r.statistics) {
    if (s.name == name) return s.ns;
  }
  return std::nullopt;
}

// A row as Google Benchmark 1.7.1 writes it.
json gbench_row(const std::string& name, const std::string& run_name, const std::string& type,
                double real, const std::string& unit, const std::string& aggregate = "") {
  json row = {{"name", name},
              {"family_index", 0},
              {"per_family_instance_index", 0},
              {"run_name", run_name},
              {"run_type", type},
              {"repetitions", 5},
              {"threads", 1},
              {"iterations", 1000},
              {"real_time", real},
              {"cpu_time", real * 0.99},
              {"time_unit", unit}};
  if (type == "aggregate") {
    row["aggregate_name"] = aggregate;
    row["aggregate_unit"] = "time";
  } else {
    row["repetition_index"] = 0;
  }
  return row;
}

json gbench_doc(json rows) {
  return json{{"context",
               {{"date", day_before_now("%Y-%m-%dT%H:%M:%S+00:00")},
                {"host_name", "host"},
                {"executable", "./bench"},
                {"num_cpus", 2},
                {"mhz_per_cpu", 2000},
                {"caches", json::array()},
                {"load_avg", {0.5, 0.4, 0.3}},
                {"library_build_type", "release"}}},
              {"benchmarks", std::move(rows)}};
}

TEST(GbenchJson, MedianFromTheAggregateSpreadFromTheRepetitionsInTheTimeUnit) {
  json rows = json::array();
  for (double t : {10.0, 11.0, 12.0, 13.0, 14.0}) {
    rows.push_back(gbench_row("BM_Gemm/64/threads:2/repeats:5", "BM_Gemm/64/threads:2/repeats:5",
                              "iteration", t, "us"));
  }
  rows.push_back(gbench_row("BM_Gemm/64/threads:2/repeats:5_mean", "BM_Gemm/64/threads:2/repeats:5",
                            "aggregate", 12.0, "us", "mean"));
  rows.push_back(gbench_row("BM_Gemm/64/threads:2/repeats:5_median",
                            "BM_Gemm/64/threads:2/repeats:5", "aggregate", 12.5, "us", "median"));
  rows.push_back(gbench_row("BM_Gemm/64/threads:2/repeats:5_stddev",
                            "BM_Gemm/64/threads:2/repeats:5", "aggregate", 1.58, "us", "stddev"));
  json cv = gbench_row("BM_Gemm/64/threads:2/repeats:5_cv", "BM_Gemm/64/threads:2/repeats:5",
                       "aggregate", 0.13, "us", "cv");
  cv["aggregate_unit"] = "percentage";
  rows.push_back(cv);
  auto out = parse_gbench_json(gbench_doc(rows).dump(2));
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->results.size(), 1U);
  const NativeResult& r = out->results[0];
  EXPECT_EQ(r.name, "BM_Gemm");
  EXPECT_EQ(workload_label(r.params), "arg0_64-threads_2");
  EXPECT_EQ(r.settings, std::vector<std::string>{"repeats:5"});
  EXPECT_EQ(r.outcome, NativeResult::Outcome::Timed) << r.failure;
  EXPECT_EQ(r.primary, "median");
  EXPECT_DOUBLE_EQ(r.primary_ns, 12'500);  // the aggregate's, not recomputed
  EXPECT_DOUBLE_EQ(*statistic(r, "p20"), 10'800);
  EXPECT_DOUBLE_EQ(*statistic(r, "p80"), 13'200);
  EXPECT_DOUBLE_EQ(*statistic(r, "stddev"), 1'580);
  EXPECT_EQ(r.samples, 5);
  EXPECT_EQ(out->harness_version, "");  // 1.7 does not write library_version
}

TEST(GbenchJson, ErrorsSkipsUnitsAndNaN) {
  json failed = gbench_row("BM_Fail", "BM_Fail", "iteration", 0, "ns");
  failed["error_occurred"] = true;
  failed["error_message"] = "cudaMalloc failed";
  json skipped = gbench_row("BM_Skip", "BM_Skip", "iteration", 0, "ns");
  skipped["skipped"] = true;
  skipped["skip_message"] = "no GPU";
  json minutes = gbench_row("BM_Min", "BM_Min", "iteration", 1, "min");
  json negative = gbench_row("BM_Neg", "BM_Neg", "iteration", -5, "ms");
  auto out = parse_gbench_json(gbench_doc({failed, skipped, minutes, negative}).dump());
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->skipped, 1U);
  ASSERT_EQ(out->results.size(), 3U);
  EXPECT_EQ(out->results[0].outcome, NativeResult::Outcome::Failed);
  EXPECT_EQ(out->results[0].failure, "the benchmark reported an error: cudaMalloc failed");
  EXPECT_EQ(out->results[1].failure, "unknown time_unit \"min\" (ns, us, ms, s)");
  EXPECT_EQ(out->results[2].failure.rfind("NaN, infinite, negative or zero time", 0), 0U)
      << out->results[2].failure;
  // One repetition, no aggregate: its time is a mean over iterations, and says so.
  auto single =
      parse_gbench_json(gbench_doc({gbench_row("BM_One", "BM_One", "iteration", 7, "ms")}).dump());
  ASSERT_TRUE(single);
  EXPECT_EQ(single->results[0].primary, "mean");
  EXPECT_DOUBLE_EQ(single->results[0].primary_ns, 7e6);
  // The reporter writes NaN bare: not JSON, a readable failure.
  std::string nan_text = gbench_doc({gbench_row("BM_X", "BM_X", "iteration", 1, "ns")}).dump(2);
  nan_text.replace(nan_text.find("\"real_time\": 1.0"), 16, "\"real_time\": NaN");
  auto nan = parse_gbench_json(nan_text);
  ASSERT_FALSE(nan);
  EXPECT_EQ(nan.error().message,
            "Google Benchmark JSON with a NaN or infinite time (not a number JSON has)");
  auto other = parse_gbench_json(R"({"benchmarks": []})");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("not Google Benchmark JSON"), std::string::npos);
}

// A state as nvbench's json_printer writes it: values are strings, times in seconds.
json nvbench_summary(const std::string& tag, const std::string& value,
                     const std::string& hint = "duration") {
  return json{{"tag", tag},
              {"name", tag},
              {"hint", hint},
              {"description", ""},
              {"data", json::array({{{"name", "value"}, {"type", "float64"}, {"value", value}}})}};
}

json nvbench_doc(json summaries, bool skipped = false) {
  json state = {{"name", "Device=0 T=F32 Elements=2^20"},
                {"min_samples", 10},
                {"device", 0},
                {"type_config_index", 0},
                {"axis_values",
                 json::array({{{"name", "T"}, {"type", "string"}, {"value", "F32"}},
                              {{"name", "Elements"}, {"type", "int64"}, {"value", "1048576"}}})},
                {"summaries", std::move(summaries)},
                {"is_skipped", skipped}};
  if (skipped) state["skip_reason"] = "not enough memory";
  return json{{"meta",
               {{"argv", {"./nvbench_copy", "--json", "out.json"}},
                {"version", {{"nvbench", {{"string", "0.2.0"}}}}}}},
              {"devices", json::array({{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}})},
              {"benchmarks",
               json::array({{{"name", "copy"}, {"index", 0}, {"states", json::array({state})}}})}};
}

TEST(NvbenchJson, TheMedianSummaryWhereThereElseTheMeanAndTheProtocolSaysSo) {
  json with_median =
      json::array({nvbench_summary("nv/cold/sample_size", "1200", "sample_size"),
                   nvbench_summary("nv/cold/time/gpu/mean", "2.05e-05"),
                   nvbench_summary("nv/cold/time/gpu/median", "2e-05"),
                   nvbench_summary("nv/cold/time/gpu/q1", "1.9e-05"),
                   nvbench_summary("nv/cold/time/gpu/q3", "2.1e-05"),
                   nvbench_summary("nv/cold/time/gpu/stdev/relative", "0.02", "percentage")});
  auto out = parse_nvbench_json(nvbench_doc(with_median).dump(2));
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->results.size(), 1U);
  const NativeResult& r = out->results[0];
  EXPECT_EQ(r.name, "copy");
  EXPECT_EQ(workload_label(r.params), "elements_1048576-t_f32");
  EXPECT_EQ(r.primary, "median");
  EXPECT_DOUBLE_EQ(r.primary_ns, 20'000);
  EXPECT_DOUBLE_EQ(*statistic(r, "q1"), 19'000);  // quartiles stay quartiles
  EXPECT_FALSE(statistic(r, "p20"));
  EXPECT_EQ(r.samples, 1200);
  EXPECT_EQ(r.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(out->harness_version, "0.2.0");
  EXPECT_EQ(out->timer, "cuda_events");

  auto mean_only =
      parse_nvbench_json(nvbench_doc({nvbench_summary("nv/cold/time/gpu/mean", "3.5e-06")}).dump());
  ASSERT_TRUE(mean_only);
  EXPECT_EQ(mean_only->results[0].primary, "mean");
  EXPECT_DOUBLE_EQ(mean_only->results[0].primary_ns, 3'500);
  EXPECT_NE(mean_only->statistics_note.find("MEAN"), std::string::npos);

  auto skipped = parse_nvbench_json(nvbench_doc(json::array(), true).dump());
  ASSERT_TRUE(skipped);
  EXPECT_TRUE(skipped->results.empty());
  EXPECT_EQ(skipped->skipped, 1U);

  auto nan =
      parse_nvbench_json(nvbench_doc({nvbench_summary("nv/cold/time/gpu/mean", "nan")}).dump());
  ASSERT_TRUE(nan);
  EXPECT_EQ(nan->results[0].outcome, NativeResult::Outcome::Failed);
  auto unit = parse_nvbench_json(
      nvbench_doc({nvbench_summary("nv/cold/time/gpu/median", "12", "cycles")}).dump());
  ASSERT_TRUE(unit);
  EXPECT_EQ(unit->results[0].failure,
            "unknown unit of nv/cold/time/gpu/median (hint \"cycles\"; seconds are \"duration\")");
}

json pytest_doc(json data, double median) {
  json stats = {{"min", 0.001},
                {"max", 0.004},
                {"mean", 0.0025},
                {"stddev", 0.001},
                {"rounds", 5},
                {"median", median},
                {"iqr", 0.001},
                {"q1", 0.002},
                {"q3", 0.003},
                {"iqr_outliers", 0},
                {"stddev_outliers", 1},
                {"outliers", "1;0"},
                {"ld15iqr", 0.001},
                {"hd15iqr", 0.004},
                {"ops", 400.0},
                {"total", 0.0125},
                {"data", std::move(data)},
                {"iterations", 1}};
  return json{
      {"machine_info", {{"node", "host"}, {"python_version", "3.11.2"}}},
      {"commit_info", {{"id", "abc"}}},
      {"benchmarks", json::array({{{"group", nullptr},
                                   {"name", "test_rms_norm[4096-bf16]"},
                                   {"fullname", "tests/test_bench.py::test_rms_norm[4096-bf16]"},
                                   {"params", {{"hidden", 4096}, {"dtype", "bf16"}}},
                                   {"param", "4096-bf16"},
                                   {"extra_info", json::object()},
                                   {"options", {{"timer", "perf_counter"}, {"min_rounds", 5}}},
                                   {"stats", std::move(stats)}}})},
      {"datetime", day_before_now("%Y-%m-%dT%H:%M:%S.000000")},
      {"version", "3.2.2"}};
}

TEST(PytestBenchmarkJson, MedianFromStatsAndP20P80FromTheRawRounds) {
  auto out =
      parse_pytest_benchmark_json(pytest_doc({0.001, 0.002, 0.0025, 0.003, 0.004}, 0.0025).dump(4));
  ASSERT_TRUE(out) << out.error().message;
  const NativeResult& r = out->results.at(0);
  EXPECT_EQ(r.name, "test_rms_norm");
  EXPECT_EQ(workload_label(r.params), "dtype_bf16-hidden_4096");
  EXPECT_DOUBLE_EQ(r.primary_ns, 2.5e6);
  EXPECT_NEAR(*statistic(r, "p20"), 1.8e6, 1e-3);
  EXPECT_NEAR(*statistic(r, "p80"), 3.2e6, 1e-3);
  EXPECT_DOUBLE_EQ(*statistic(r, "q1"), 2e6);
  EXPECT_EQ(r.samples, 5);
  EXPECT_EQ(out->harness_version, "3.2.2");
  // A median outside its own rounds' p20..p80 is not a measurement.
  auto bad = parse_pytest_benchmark_json(pytest_doc({0.001, 0.002, 0.003}, 0.009).dump());
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->results[0].outcome, NativeResult::Outcome::Failed);
  EXPECT_EQ(bad->results[0].failure.rfind("quantiles out of order", 0), 0U)
      << bad->results[0].failure;
}

TEST(LigerCsvOutput, RowsThroughTheImportersMapping) {
  const std::string stamp = day_before_now("%Y-%m-%d %H:%M:%S");  // Liger's naive timestamp
  const std::string csv =
      "kernel_name,kernel_provider,metric_name,metric_unit,gpu_name,x_name,x_label,x_value,"
      "y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,kernel_operation_mode,"
      "timestamp,liger_version\n"
      "rms_norm,liger,speed,ms,NVIDIA H100 80GB HBM3,H,hidden size,4096,0.05,0.049,0.052,"
      "\"{\"\"M\"\": 2048, \"\"dtype\"\": \"\"torch.bfloat16\"\", \"\"eps\"\": 1e-06}\",forward," +
      stamp +
      ",0.6.1\n"
      "rms_norm,liger,memory,MB,NVIDIA H100 80GB HBM3,H,hidden size,4096,12,12,12,"
      "\"{\"\"M\"\": 2048}\",full," +
      stamp + ",0.6.1\n";
  auto out = parse_liger_csv_output(csv);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->results.size(), 1U);
  EXPECT_EQ(out->skipped, 1U);
  const NativeResult& r = out->results[0];
  EXPECT_EQ(r.name, "rms_norm.forward");
  EXPECT_EQ(r.provider, "liger");
  EXPECT_FALSE(r.workload.empty());
  EXPECT_DOUBLE_EQ(r.primary_ns, 50'000);
  EXPECT_DOUBLE_EQ(*statistic(r, "p20"), 49'000);
  EXPECT_EQ(r.implementation_version, "0.6.1");
  EXPECT_FALSE(parse_liger_csv_output("a,b\n1,2\n"));
}

TEST(KernelindexLines, PrefixedLinesAmongLogLinesAreTheRecords) {
  const std::string record = testing::read_file(
      testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json"));
  const json one_line = json::parse(record);
  const std::string text = "starting\n{\"not\": \"a record\"}\n" +
                           std::string(kKernelindexLinePrefix) + one_line.dump() + "\ndone\n";
  auto records = parse_kernelindex_lines(text);
  ASSERT_TRUE(records) << records.error().message;
  EXPECT_EQ(records->size(), 1U);
  auto unprefixed = parse_kernelindex_lines("log line\n" + one_line.dump() + "\n");
  ASSERT_TRUE(unprefixed) << unprefixed.error().message;
  EXPECT_EQ(unprefixed->size(), 1U);
  auto bad = parse_kernelindex_lines("{\"run\": 1}\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("not a kernelindex record: line 1", 0), 0U)
      << bad.error().message;
  EXPECT_FALSE(parse_kernelindex_lines("only logs\n"));
}

TEST(WorkloadLabel, CanonicalAndBounded) {
  EXPECT_EQ(workload_label({}), "default");
  EXPECT_EQ(workload_label({{"M", "2048"}, {"dtype", "torch.bfloat16"}}),
            "m_2048-dtype_torch.bfloat16");
  const std::string long_label = workload_label({{"x", std::string(500, 'a')}});
  EXPECT_EQ(long_label.size(), 200U);
  EXPECT_NE(long_label, workload_label({{"x", std::string(499, 'a') + "b"}}));
}

}  // namespace
}  // namespace kernelwatch::runners
