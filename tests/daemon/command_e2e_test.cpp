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

#include "tests/daemon/support/watching_daemon.hpp"
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

}  // namespace
}  // namespace kernelwatch
