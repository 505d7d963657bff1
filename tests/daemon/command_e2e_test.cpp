// `"runner": "command"` entries run by the real daemon (issue #24): a real Google Benchmark
// program (Debian's libbenchmark, built with these tests) and a real pytest-benchmark suite
// (Debian's python3-pytest-benchmark, run by /usr/bin/python3). Each creates its keys, a slowdown
// written to a file the program reads (its command, environment and key unchanged) fires one
// alert naming the band it left, and going back resolves it. Cycles are triggered through the
// API and counted from the log; nothing sleeps to synchronise.
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/daemon/support/watching_daemon.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

#ifndef KW_GBENCH_SAXPY
#define KW_GBENCH_SAXPY ""
#endif

namespace kernelwatch {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Wide enough for a shared 2-core machine's noise, far below the 25x slowdown (medians of this test
// move 3x between cycles on a loaded 2-core machine).
// Since young keys of one host are judged by their own evidence (issue #36), the band of these
// keys is what min_relative_margin allows: 1.0 (the most it may be, a band up to twice the
// centre), as a pytest run under the suite's load once moved +66% between two cycles (50.6 us,
// then 83.9 us at the same work, in .ci/run) and fired a step before the slowdown.
const json kDetector = {{"min_history", 3}, {"min_relative_margin", 1.0}, {"confirm_reruns", 1}};

struct Watched {
  json keys;
  json fired;
  json resolved;
  std::string log;
};

// Runs `baseline` cycles at speed 1, one `factor` times slower, one back at 1; what the API says
// after.
Watched watch_a_slowdown(testing::WatchingDaemon& daemon, const std::filesystem::path& slowdown,
                         int baseline, int factor = 25) {
  Watched out;
  testing::write_file(slowdown, "1\n");
  daemon.start();
  EXPECT_NE(daemon.port(), 0) << daemon.log();
  EXPECT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  for (int i = 1; i < baseline; ++i) EXPECT_TRUE(daemon.run_cycle()) << daemon.log();
  out.keys = daemon.get("/api/v1/keys");
  EXPECT_TRUE(daemon.get("/api/v1/alerts?state=firing").empty()) << daemon.log();
  testing::write_file(slowdown, std::to_string(factor) + "\n");
  EXPECT_TRUE(daemon.run_cycle()) << daemon.log();
  out.fired = daemon.get("/api/v1/alerts?state=firing");
  testing::write_file(slowdown, "1\n");
  EXPECT_TRUE(daemon.run_cycle()) << daemon.log();
  out.resolved = daemon.get("/api/v1/alerts?state=resolved");
  out.log = daemon.log();
  daemon.child().stop(20s);
  return out;
}

void expect_one_alert_on(const Watched& w, const std::string& benchmark,
                         const std::string& workload) {
  ASSERT_EQ(w.keys.size(), 1U) << w.keys.dump(2);
  EXPECT_EQ(w.keys[0]["benchmark"], benchmark) << w.keys.dump(2);
  EXPECT_EQ(w.keys[0]["workload"], workload) << w.keys.dump(2);
  ASSERT_EQ(w.fired.size(), 1U) << w.fired.dump(2) << w.log;
  const json& alert = w.fired[0];
  EXPECT_EQ(alert["benchmark"], benchmark);
  EXPECT_EQ(alert["direction"], "regression");
  const std::string explanation = alert.value("explanation", "");
  EXPECT_NE(explanation.find("above the band ["), std::string::npos) << explanation;
  std::printf("%s: %s\n", benchmark.c_str(), explanation.c_str());
  ASSERT_EQ(w.resolved.size(), 1U) << w.resolved.dump(2) << w.log;
  EXPECT_EQ(w.resolved[0]["id"], alert["id"]);
}

TEST(CommandE2E, AGoogleBenchmarkProgramIsWatchedAndItsSlowdownAlertsAndResolves) {
  const std::filesystem::path program = KW_GBENCH_SAXPY;
  ASSERT_FALSE(program.empty()) << "libbenchmark-dev is missing: run scripts/setup";
  ASSERT_TRUE(std::filesystem::exists(program)) << program;
  testing::TempDir dir;
  const auto slowdown = dir / "slowdown";
  testing::WatchingDaemon daemon(
      dir.path(),
      json::array({{{"runner", "command"},
                    {"name", "saxpy"},
                    {"command",
                     {program.string(), "--benchmark_format=json", "--benchmark_repetitions=5",
                      "--benchmark_min_time=0.02", "--benchmark_filter=BM_Saxpy/16384"}},
                    {"format", "gbench-json"},
                    // Manual time (as a GPU benchmark reports CUDA-event time): the judge e2e
                    // test saw 4-6 timed runs of this work under the suite's load span 4000x.
                    {"env", {{"KW_SLOWDOWN_FILE", slowdown.string()}, {"KW_PASS_NS", "10000"}}},
                    {"timeout", "2m"}}}),
      kDetector);
  const Watched w = watch_a_slowdown(daemon, slowdown, 4);
  expect_one_alert_on(w, "saxpy/BM_Saxpy", "arg0_16384");
}

TEST(CommandE2E, APytestBenchmarkSuiteIsWatchedAndItsSlowdownAlertsAndResolves) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/python3"));
  const auto suite = testing::data_dir().parent_path() / "tests/daemon/programs";
  ASSERT_TRUE(std::filesystem::exists(suite / "test_pytest_saxpy.py"));
  testing::TempDir dir;
  const auto slowdown = dir / "slowdown";
  testing::WatchingDaemon daemon(
      dir.path(),
      json::array(
          {{{"runner", "command"},
            {"name", "pysaxpy"},
            {"command",
             {"/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
              "--benchmark-json={out}", "--benchmark-max-time=0.05", "--benchmark-min-rounds=10",
              "-k", "2000", (suite / "test_pytest_saxpy.py").string()}},
            {"format", "pytest-benchmark-json"},
            {"output", "{out}"},
            {"working_directory", dir.path().string()},
            {"env", {{"KW_SLOWDOWN_FILE", slowdown.string()}}},
            {"timeout", "5m"}}}),
      kDetector);
  // A young key's band is the noise its runs showed (issue #36): on a quiet machine 4 runs of this
  // suite show 28% and a band of +-200%, but under the suite's load one clean-clone CI saw medians
  // move enough (a log-noise above 0.7) that a 25x slowdown fell inside the band of 4 runs. 6 runs
  // and 100x hold until the medians move 3.3x (log-noise 1.2) between cycles.
  const Watched w = watch_a_slowdown(daemon, slowdown, 6, 100);
  expect_one_alert_on(w, "pysaxpy/test_saxpy", "n_2000");
}

// Google Benchmark JSON of one benchmark with three repetitions, as 1.7.1 writes it.
std::string gbench_fixture() {
  json rows = json::array();
  for (int i = 0; i < 3; ++i) {
    rows.push_back({{"name", "BM_A/8"},
                    {"run_name", "BM_A/8"},
                    {"run_type", "iteration"},
                    {"repetitions", 3},
                    {"repetition_index", i},
                    {"threads", 1},
                    {"iterations", 10},
                    {"real_time", 10.0 + i},
                    {"cpu_time", 10.0 + i},
                    {"time_unit", "us"}});
  }
  return json{{"context", {{"library_build_type", "release"}}}, {"benchmarks", rows}}.dump(2);
}

TEST(CommandE2E, EachEntryRunsAtItsOwnIntervalAndStatusShowsItsLastAndNextRunAndError) {
  testing::TempDir dir;
  testing::write_file(dir / "out.json", gbench_fixture());
  testing::WatchingDaemon daemon(
      dir.path(),
      json::array({{{"runner", "command"},
                    {"name", "fast"},
                    {"command", {"cat", (dir / "out.json").string()}},
                    {"format", "gbench-json"},
                    {"interval", "2s"}},
                   {{"runner", "command"},
                    {"name", "slow"},
                    {"command", {"/bin/sh", "-c", "echo the GPU fell off the bus >&2; exit 4"}},
                    {"format", "gbench-json"},
                    {"interval", "1h"}}}));
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  // The fast entry runs every 2 s; the slow one once, at start.
  ASSERT_TRUE(testing::eventually(
      [&] { return daemon.get("/api/v1/runs?benchmark=fast/BM_A").size() >= 3; }, 60s))
      << daemon.log();
  EXPECT_EQ(daemon.get("/api/v1/runs?benchmark=slow/command").size(), 1U) << daemon.log();
  const json status = daemon.get("/api/v1/status");
  ASSERT_EQ(status["entries"].size(), 2U) << status.dump(2);
  const json& fast = status["entries"][0];
  const json& slow = status["entries"][1];
  EXPECT_EQ(fast["name"], "fast");
  EXPECT_EQ(fast["intervalSeconds"], 2.0);
  EXPECT_TRUE(fast["lastError"].is_null());
  EXPECT_EQ(slow["runner"], "command");
  EXPECT_EQ(slow["lastError"], "exited with status 4: the GPU fell off the bus");
  EXPECT_EQ(slow["lastFailedRuns"], 1);
  // The slow entry's next run is an hour after its first.
  const auto slow_next = core::parse_timestamp(slow["next"].get<std::string>());
  const auto slow_start = core::parse_timestamp(slow["lastStart"].get<std::string>());
  ASSERT_TRUE(slow_next && slow_start);
  EXPECT_GE(*slow_next - *slow_start, 59min);
  EXPECT_LE(*slow_next - *slow_start, 61min);

  const auto printed = testing::run_kernelwatch(
      {"status", "--url", "http://127.0.0.1:" + std::to_string(daemon.port())});
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_NE(printed.out.find("ENTRY"), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("exited with status 4: the GPU fell off the bus"), std::string::npos)
      << printed.out;
  std::printf("%s", printed.out.c_str());
  const auto page = testing::http(daemon.port(), "GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<caption>Entries</caption>"), std::string::npos);
  EXPECT_NE(page.body.find("exited with status 4: the GPU fell off the bus"), std::string::npos);
  daemon.child().stop(20s);
}

// nvbench's --json as its json_printer writes it (strings, seconds): `copy` at two points of its
// Elements axis and one skipped point. The first names no device, so it is timed on any host; the
// second claims a GPU no host has, which the daemon's own probe refutes.
std::string nvbench_fixture() {
  const auto summary = [](const std::string& tag, const std::string& value) {
    return json{
        {"tag", tag},
        {"name", tag},
        {"hint", "duration"},
        {"description", ""},
        {"data", json::array({{{"name", "value"}, {"type", "float64"}, {"value", value}}})}};
  };
  const auto state = [&](const std::string& elements, json device, bool skipped) {
    json s = {{"name", "Elements=" + elements},
              {"min_samples", 10},
              {"type_config_index", 0},
              {"axis_values",
               json::array({{{"name", "Elements"}, {"type", "int64"}, {"value", elements}}})},
              {"summaries", json::array({summary("nv/cold/time/gpu/median", "2e-05"),
                                         summary("nv/cold/time/gpu/mean", "2.1e-05")})},
              {"is_skipped", skipped}};
    if (!device.is_null()) s["device"] = device;
    if (skipped) s["skip_reason"] = "not enough memory";
    return s;
  };
  return json{
      {"meta", {{"version", {{"nvbench", {{"string", "0.2.0"}}}}}}},
      {"devices", json::array({{{"id", 0}, {"name", "NVIDIA Imaginary GPU 1TB"}}})},
      {"benchmarks",
       json::array({{{"name", "copy"},
                     {"index", 0},
                     {"states", json::array({state("1024", nullptr, false), state("2048", 0, false),
                                             state("4096", nullptr, true)})}}})}}
      .dump(2);
}

// The CSV Liger-Kernel's update_benchmark_data_csv writes: one speed row of rms_norm on a GPU this
// host does not have (the daemon's probe refutes it), and a memory row, which is not a timing.
// Dated a day before now, in the CSV's "YYYY-MM-DD HH:MM:SS" without a zone.
std::string liger_csv() {
  std::string when = core::format_timestamp(testing::day_before_now()).substr(0, 19);
  when[10] = ' ';
  return "kernel_name,kernel_provider,metric_name,metric_unit,gpu_name,x_name,x_label,x_value,"
         "y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,kernel_operation_mode,"
         "timestamp,liger_version\n"
         "rms_norm,liger,speed,ms,NVIDIA Imaginary GPU 1TB,H,hidden size,4096,0.05,0.049,0.052,"
         "\"{\"\"M\"\": 2048, \"\"dtype\"\": \"\"torch.bfloat16\"\", \"\"eps\"\": "
         "1e-06}\",forward," +
         when + ",0.6.1\n" +
         "rms_norm,liger,memory,MB,NVIDIA Imaginary GPU 1TB,H,hidden size,4096,12,12,12,"
         "\"{\"\"M\"\": 2048}\",full," +
         when + ",0.6.1\n";
}

std::string status_of(const json& record) {
  return record["run"]["spec"].value("status", "");
}

TEST(CommandE2E, TheNvbenchLigerCsvAndKernelindexFormatsThroughTheRealBinary) {
  testing::TempDir dir;
  testing::write_file(dir / "nvbench.json", nvbench_fixture());
  testing::write_file(dir / "liger.csv", liger_csv());
  testing::PostedRun printed;
  printed.observed = testing::day_before_now();
  printed.median_ns = 2'000'000;
  testing::write_file(dir / "log.txt", "loading model\n{\"progress\": 0.5}\nKERNELINDEX_RUN: " +
                                           testing::posted_record(printed).dump() + "\nall done\n");
  testing::WatchingDaemon daemon(
      dir.path(), json::array({{{"runner", "command"},
                                {"name", "nv"},
                                {"command", {"cat", (dir / "nvbench.json").string()}},
                                {"format", "nvbench-json"}},
                               {{"runner", "command"},
                                {"name", "liger"},
                                {"command", {"cat", (dir / "liger.csv").string()}},
                                {"format", "liger-csv"}},
                               {{"runner", "command"},
                                {"name", "ki"},
                                {"command", {"cat", (dir / "log.txt").string()}},
                                {"format", "kernelindex-jsonl"}}}));
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const json runs = daemon.wait_for_runs(4, 120s);
  ASSERT_EQ(runs.size(), 4U) << runs.dump(2) << daemon.log();
  std::map<std::string, json> by_key;
  for (const auto& r : runs) {
    const json& labels = r["run"]["metadata"]["labels"];
    by_key[r["run"]["spec"]["sourceNative"].value("benchmark", "") + " " +
           labels.value("workload", "")] = r;
  }
  // nvbench: the median summary in ns, the protocol naming the format and nvbench's version.
  const json& nv = by_key["nv/copy elements_1024"];
  ASSERT_TRUE(nv.is_object()) << runs.dump(2);
  EXPECT_EQ(status_of(nv), "passed") << nv.dump(2);
  EXPECT_EQ(nv["run"]["spec"]["timing"]["latencyNs"]["median"], 20'000) << nv.dump(2);
  EXPECT_NE(nv["protocol"].dump().find("nvbench-json"), std::string::npos) << nv["protocol"];
  EXPECT_NE(nv["protocol"].dump().find("0.2.0"), std::string::npos) << nv["protocol"];
  const json& claimed = by_key["nv/copy elements_2048"];
  ASSERT_TRUE(claimed.is_object()) << runs.dump(2);
  EXPECT_EQ(status_of(claimed), "runtime_error");
  EXPECT_EQ(testing::reason_of(claimed).rfind(
                "the output says it ran on \"NVIDIA Imaginary GPU 1TB\", the daemon probed", 0),
            0U)
      << testing::reason_of(claimed);
  // Liger's CSV: the speed row through the importer's mapping, refuted by the probe; the memory
  // row is no run.
  const json* liger = nullptr;
  for (const auto& [key, r] : by_key) {
    if (key.rfind("liger/", 0) == 0) liger = &r;
  }
  ASSERT_NE(liger, nullptr) << runs.dump(2);
  EXPECT_EQ((*liger)["run"]["spec"]["sourceNative"]["benchmark"], "liger/rms_norm.forward");
  EXPECT_EQ(status_of(*liger), "runtime_error");
  EXPECT_EQ(testing::reason_of(*liger).rfind("the output says it ran on \"NVIDIA Imaginary", 0), 0U)
      << liger->dump(2);
  // kernelindex lines: the prefixed record among log lines, in its own key, on this host.
  const json& ki = by_key["synthetic/forward synthetic-e2e"];
  ASSERT_TRUE(ki.is_object()) << runs.dump(2);
  EXPECT_EQ(status_of(ki), "passed");
  EXPECT_EQ(ki["run"]["metadata"]["labels"]["entry"], "ki");
  EXPECT_EQ(ki["run"]["spec"]["timing"]["latencyNs"]["median"], 2'000'000);
  EXPECT_EQ(ki["run"]["spec"]["sourceNative"]["source"], "kernelwatch-command");
  EXPECT_EQ(daemon.get("/api/v1/status")["entries"].size(), 3U);
  daemon.child().stop(20s);
}

TEST(CommandE2E, DiscoverRunsAnEntryOnceStoresNothingAndShowsEachKeysHistory) {
  testing::TempDir dir;
  testing::write_file(dir / "out.json", gbench_fixture());
  testing::WatchingDaemon daemon(
      dir.path(), json::array({{{"runner", "command"},
                                {"name", "fast"},
                                {"command", {"cat", (dir / "out.json").string()}},
                                {"format", "gbench-json"}},
                               {{"runner", "command"},
                                {"name", "broken"},
                                {"command", {"/bin/sh", "-c", "echo no such device >&2; exit 3"}},
                                {"format", "gbench-json"}}}));
  const std::string config = (dir / "kernelwatch.json").string();
  const auto first = testing::run_kernelwatch({"discover", "--config", config});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  std::printf("%s%s", first.out.c_str(), first.err.c_str());
  EXPECT_NE(first.out.find("fast/BM_A"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("arg0_8"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("passed 11"), std::string::npos) << first.out;  // the 11 us median
  EXPECT_NE(first.out.find("runtime_error: exited with status 3: no such device"),
            std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("2 key(s); nothing was stored"), std::string::npos) << first.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "kw.db"));

  const auto unknown = testing::run_kernelwatch({"discover", "--config", config, "--entry", "x"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("the config has no entry named \"x\""), std::string::npos)
      << unknown.err;

  // After the daemon stored runs, the same key shows its history.
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_EQ(daemon.wait_for_runs(2).size(), 2U) << daemon.log();
  daemon.child().stop(20s);
  const auto second =
      testing::run_kernelwatch({"discover", "--config", config, "--entry", "fast", "--json"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const json keys = json::parse(second.out);
  ASSERT_EQ(keys.size(), 1U) << second.out;
  EXPECT_EQ(keys[0]["benchmark"], "fast/BM_A");
  EXPECT_EQ(keys[0]["historyRuns"], 1);
  EXPECT_EQ(keys[0]["status"], "passed");
}

// discover --list: the cases of the real Google Benchmark program (--benchmark_list_tests) and
// of the real pytest-benchmark suite (pytest --collect-only -q), each with the history the daemon
// stored for it, while a slowdown no run could finish within the entries' minute proves nothing
// ran; a format whose harness cannot list says the entry must run.
TEST(CommandE2E, DiscoverListNamesTheCasesOfGoogleBenchmarkAndPytestWithoutRunningThem) {
  const std::filesystem::path program = KW_GBENCH_SAXPY;
  ASSERT_FALSE(program.empty()) << "libbenchmark-dev is missing: run scripts/setup";
  const auto suite = testing::data_dir().parent_path() / "tests/daemon/programs";
  testing::TempDir dir;
  const auto slowdown = dir / "slowdown";
  testing::write_file(slowdown, "1\n");
  testing::write_file(dir / "nvbench.json", nvbench_fixture());
  testing::WatchingDaemon daemon(
      dir.path(),
      json::array({{{"runner", "command"},
                    {"name", "saxpy"},
                    {"command",
                     {program.string(), "--benchmark_format=json", "--benchmark_repetitions=3",
                      "--benchmark_min_time=0.01", "--benchmark_filter=BM_Saxpy/16384"}},
                    {"format", "gbench-json"},
                    {"env", {{"KW_SLOWDOWN_FILE", slowdown.string()}}},
                    {"timeout", "1m"}},
                   {{"runner", "command"},
                    {"name", "pysaxpy"},
                    {"command",
                     {"/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                      "--benchmark-json={out}", "--benchmark-max-time=0.02",
                      "--benchmark-min-rounds=5", (suite / "test_pytest_saxpy.py").string()}},
                    {"format", "pytest-benchmark-json"},
                    {"output", "{out}"},
                    {"working_directory", dir.path().string()},
                    {"env", {{"KW_SLOWDOWN_FILE", slowdown.string()}}},
                    {"timeout", "1m"}},
                   {{"runner", "command"},
                    {"name", "nv"},
                    {"command", {"cat", (dir / "nvbench.json").string()}},
                    {"format", "nvbench-json"}}}));
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  daemon.child().stop(20s);
  testing::write_file(slowdown, "100000000\n");
  const std::string config = (dir / "kernelwatch.json").string();

  const auto gbench =
      testing::run_kernelwatch({"discover", "--config", config, "--entry", "saxpy", "--list"});
  EXPECT_EQ(gbench.exit_code, 0) << gbench.err;
  std::printf("%s%s", gbench.out.c_str(), gbench.err.c_str());
  EXPECT_NE(gbench.out.find("BM_Saxpy/16384"), std::string::npos) << gbench.out;
  EXPECT_NE(gbench.out.find("saxpy/BM_Saxpy"), std::string::npos) << gbench.out;
  EXPECT_NE(gbench.out.find("arg0_16384"), std::string::npos) << gbench.out;
  EXPECT_EQ(gbench.out.find("BM_Saxpy/65536"), std::string::npos) << gbench.out;  // filtered
  EXPECT_NE(gbench.out.find("1 run(s)"), std::string::npos) << gbench.out;
  EXPECT_NE(gbench.out.find("1 case(s) listed; nothing was run"), std::string::npos) << gbench.out;

  const auto pytest = testing::run_kernelwatch(
      {"discover", "--config", config, "--entry", "pysaxpy", "--list", "--json"});
  ASSERT_EQ(pytest.exit_code, 0) << pytest.err;
  const json cases = json::parse(pytest.out);
  ASSERT_EQ(cases.size(), 2U) << pytest.out;
  EXPECT_EQ(cases[0]["case"], "test_saxpy[2000]");
  EXPECT_EQ(cases[0]["benchmark"], "pysaxpy/test_saxpy");
  EXPECT_TRUE(cases[0]["workload"].is_null());
  EXPECT_EQ(cases[0]["historyRuns"], 1) << pytest.out;  // the stored run of n_2000
  EXPECT_EQ(cases[1]["case"], "test_saxpy[8000]");
  EXPECT_EQ(cases[1]["historyRuns"], 1) << pytest.out;

  const auto nv =
      testing::run_kernelwatch({"discover", "--config", config, "--entry", "nv", "--list"});
  EXPECT_EQ(nv.exit_code, 1);
  EXPECT_NE(nv.err.find("nv: nvbench-json output cannot list its cases without running them: "
                        "run discover without --list to see its keys"),
            std::string::npos)
      << nv.err;
}

}  // namespace
}  // namespace kernelwatch
