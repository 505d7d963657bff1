// compare's reading of result files: each format recognised from its text, its cases' ids,
// environments and times, several runs of a case in one file merged into samples, and the
// errors of an empty file or one of no known format.
#include "runners/compare_input.hpp"
#include "runners/command.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using nlohmann::json;

std::string repo_file(const std::string& path) {
  return testing::read_file(testing::data_dir().parent_path() / path);
}

TEST(CompareInput, AGoogleBenchmarkOutputGivesItsRepetitionsAndItsHost) {
  const std::string text = repo_file("tests/daemon/programs/gbench_sample.json");
  ASSERT_EQ(*recognise_format(text), OutputFormat::GbenchJson);
  const auto in = read_compare_input(text, std::nullopt);
  ASSERT_TRUE(in) << in.error().message;
  ASSERT_EQ(in->cases.size(), 2U);
  EXPECT_EQ(in->cases[0].id, "BM_Saxpy/16384");
  EXPECT_EQ(in->cases[0].times.samples_ns.size(), 3U);  // --benchmark_repetitions=3
  const auto& env = in->cases[0].environment;
  ASSERT_FALSE(env.empty());
  EXPECT_EQ(env[0].first, "host_name");
  // The recorded file's rows, not a value computed here: its median aggregate.
  const json doc = json::parse(text);
  for (const auto& row : doc["benchmarks"]) {
    if (row["run_name"] == "BM_Saxpy/16384" && row.value("aggregate_name", "") == "median") {
      EXPECT_NEAR(in->cases[0].times.median_ns, row["real_time"].get<double>() * 1e3, 1e-6);
    }
  }
}

TEST(CompareInput, AnNvbenchOutputGivesQuantilesAndItsDevice) {
  const auto summary = [](const std::string& tag, const std::string& value) {
    return json{
        {"tag", tag},
        {"name", tag},
        {"hint", "duration"},
        {"data", json::array({{{"name", "value"}, {"type", "float64"}, {"value", value}}})}};
  };
  const json doc = {
      {"meta", {{"version", {{"nvbench", {{"string", "0.2.0"}}}}}}},
      {"devices", json::array({{{"id", 0}, {"name", "NVIDIA H200"}}})},
      {"benchmarks",
       json::array(
           {{{"name", "copy"},
             {"states",
              json::array({{{"name", "Device=0 Elements=2^20"},
                            {"device", 0},
                            {"axis_values", json::array({{{"name", "Elements"},
                                                          {"type", "int64"},
                                                          {"value", "1048576"}}})},
                            {"summaries",
                             json::array({summary("nv/cold/time/gpu/median", "2e-05"),
                                          summary("nv/cold/time/gpu/q1", "1.9e-05"),
                                          summary("nv/cold/time/gpu/q3", "2.1e-05")})}}})}}})}};
  const std::string text = doc.dump();
  ASSERT_EQ(*recognise_format(text), OutputFormat::NvbenchJson);
  const auto in = read_compare_input(text, std::nullopt);
  ASSERT_TRUE(in) << in.error().message;
  ASSERT_EQ(in->cases.size(), 1U);
  EXPECT_EQ(in->cases[0].id, "copy[Elements=1048576]");
  EXPECT_DOUBLE_EQ(in->cases[0].times.median_ns, 20'000);
  EXPECT_DOUBLE_EQ(*in->cases[0].times.q1_ns, 19'000);
  EXPECT_TRUE(in->cases[0].times.samples_ns.empty());
  ASSERT_EQ(in->cases[0].environment.size(), 1U);
  EXPECT_EQ(in->cases[0].environment[0].second, "NVIDIA H200");
}

TEST(CompareInput, LigersCsvHistoryMergesEachCasesWeeksIntoSamples) {
  const std::string text = repo_file("data/liger/weekly_ci.tvd_layer_norm.csv");
  ASSERT_EQ(*recognise_format(text), OutputFormat::LigerCsv);
  const auto in = read_compare_input(text, std::nullopt);
  ASSERT_TRUE(in) << in.error().message;
  ASSERT_FALSE(in->cases.empty());
  std::size_t merged = 0;
  for (const auto& c : in->cases) {
    if (c.occurrences < 2) continue;
    ++merged;
    EXPECT_EQ(c.times.samples_ns.size(), static_cast<std::size_t>(c.occurrences)) << c.id;
    EXPECT_EQ(c.times.count, c.occurrences) << c.id;
  }
  EXPECT_GT(merged, 0U) << "the weekly history has cases measured in several weeks";
}

TEST(CompareInput, AKernelindexRecordGivesItsKeyAsItsCase) {
  const std::string record = testing::read_file(
      testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json"));
  const std::string line = json::parse(record).dump() + "\n";
  ASSERT_EQ(*recognise_format(line), OutputFormat::KernelindexJsonl);
  const auto in = read_compare_input(line, std::nullopt);
  ASSERT_TRUE(in) << in.error().message;
  ASSERT_EQ(in->cases.size(), 1U);
  EXPECT_NE(in->cases[0].id.find("tvd/backward"), std::string::npos) << in->cases[0].id;
  EXPECT_EQ(in->cases[0].environment[0].first, "environment");
  const auto twice = read_compare_input(line + line, OutputFormat::KernelindexJsonl);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->cases[0].occurrences, 2);
}

TEST(CompareInput, EmptyAndUnknownTextsAreErrorsThatSaySo) {
  const auto empty = read_compare_input("  \n", std::nullopt);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, "the file is empty");
  const auto unknown = read_compare_input("\xff\xfe not a result", std::nullopt);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("give --format"), std::string::npos);
  const auto no_case = read_compare_input(R"({"context": {}, "benchmarks": []})", std::nullopt);
  ASSERT_FALSE(no_case);
  EXPECT_NE(no_case.error().message.find("no benchmark case"), std::string::npos);
  const auto deep = read_compare_input(std::string(100000, '[') + std::string(100000, ']'),
                                       OutputFormat::GbenchJson);
  EXPECT_FALSE(deep);
}

}  // namespace
}  // namespace kernelwatch::runners

namespace kernelwatch::runners {
namespace {

// compare's rounds run each program through run_entry_output with the daemon's GPU sampler.
// There is no GPU here, so the sampler is a stand-in that reports a throttled GPU with another
// compute process, as NVML would.
TEST(RunEntryOutput, TheGpuIsSampledWhileTheProgramRunsAndItsOutputIsReturned) {
  CommandEntry entry;
  entry.name = "sampled";
  entry.command = {"/bin/echo", "{\"context\": {}}"};
  CommandContext context;
  int calls = 0;
  int seen_pid = 0;
  context.sampler = [&](int pid) {
    ++calls;
    seen_pid = pid;
    kernels::GpuSample s;
    s.other_compute_processes = 1;
    return s;
  };
  std::vector<kernels::GpuSample> samples;
  const auto text = run_entry_output(entry, EnvironmentBase::Minimal, context, &samples);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "{\"context\": {}}\n");
  EXPECT_GE(calls, 1);
  EXPECT_GT(seen_pid, 0);
  ASSERT_FALSE(samples.empty());
  EXPECT_NE(inconclusive_during(samples).find("other compute process"), std::string::npos);
  // Without a place for the samples the sampler is not called.
  calls = 0;
  ASSERT_TRUE(run_entry_output(entry, EnvironmentBase::Minimal, context));
  EXPECT_EQ(calls, 0);
  entry.command = {"/bin/false"};
  const auto failed = run_entry_output(entry, EnvironmentBase::Minimal, context);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("exited with status 1"), std::string::npos)
      << failed.error().message;
}

}  // namespace
}  // namespace kernelwatch::runners
