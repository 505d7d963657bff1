// `"runner": "command"` entries run by the real daemon (issue #24): a real Google Benchmark
// program (Debian's libbenchmark, built with these tests) and a real pytest-benchmark suite
// (Debian's python3-pytest-benchmark, run by /usr/bin/python3). Each creates its keys, a slowdown
// written to a file the program reads (its command, environment and key unchanged) fires one
// alert naming the band it left, and going back resolves it. Cycles are triggered through the
// API and counted from the log; nothing sleeps to synchronise.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
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
const json kDetector = {{"min_history", 3}, {"min_relative_margin", 0.5}, {"confirm_reruns", 1}};

struct Watched {
  json keys;
  json fired;
  json resolved;
  std::string log;
};

// Runs `baseline` cycles at speed 1, one 25 times slower, one back at 1; what the API says after.
Watched watch_a_slowdown(testing::WatchingDaemon& daemon, const std::filesystem::path& slowdown,
                         int baseline) {
  Watched out;
  testing::write_file(slowdown, "1\n");
  daemon.start();
  EXPECT_NE(daemon.port(), 0) << daemon.log();
  EXPECT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  for (int i = 1; i < baseline; ++i) EXPECT_TRUE(daemon.run_cycle()) << daemon.log();
  out.keys = daemon.get("/api/v1/keys");
  EXPECT_TRUE(daemon.get("/api/v1/alerts?state=firing").empty()) << daemon.log();
  testing::write_file(slowdown, "25\n");
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
                    {"env", {{"KW_SLOWDOWN_FILE", slowdown.string()}}},
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
  const Watched w = watch_a_slowdown(daemon, slowdown, 4);
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

}  // namespace
}  // namespace kernelwatch
