// The command runner against real programs (cat, sh, python3, setsid): every failure kind of
// issue #24 is a failed run with a one-line reason in the entry's keys, never a judged partial
// output. The host probe is fixed here (a CPU, or an H100 where an output claims one: no GPU on
// this machine, said where used); the clock is the test's.
#include "runners/command.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/json_limits.hpp"
#include "core/key.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::runners {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

core::Timestamp test_now() {
  return core::parse_timestamp("2026-06-01T12:00:00Z").value();
}

HostIdentity cpu_host() {
  HostIdentity host;
  host.hardware = {"intel", "Intel Xeon Test", "", "x86_64"};
  host.memory_bytes = 1U << 30;
  return host;
}

// A stand-in for NVML's answer on an H100 host (there is no GPU here).
HostIdentity h100_host() {
  HostIdentity host;
  host.gpu_name = "NVIDIA H100 80GB HBM3";
  host.hardware = core::hardware_from_gpu_name(host.gpu_name);
  return host;
}

std::string reason(const core::Record& o) {
  return o.run.status_reason;
}

std::string key_display(const core::Record& o) {
  const auto key = core::key_of(o);
  return key ? key->display() : "no key: " + key.error().message;
}

// Google Benchmark 1.7.1's JSON of BM_Copy/<size> with 3 repetitions and their median aggregate.
json gbench_output(const std::vector<std::pair<std::string, std::vector<double>>>& benchmarks,
                   const std::string& unit = "us") {
  json rows = json::array();
  for (const auto& [name, times] : benchmarks) {
    for (std::size_t i = 0; i < times.size(); ++i) {
      rows.push_back({{"name", name},
                      {"run_name", name},
                      {"run_type", "iteration"},
                      {"repetitions", times.size()},
                      {"repetition_index", i},
                      {"threads", 1},
                      {"iterations", 100},
                      {"real_time", times[i]},
                      {"cpu_time", times[i]},
                      {"time_unit", unit}});
    }
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    rows.push_back({{"name", name + "_median"},
                    {"run_name", name},
                    {"run_type", "aggregate"},
                    {"repetitions", times.size()},
                    {"threads", 1},
                    {"aggregate_name", "median"},
                    {"aggregate_unit", "time"},
                    {"iterations", 3},
                    {"real_time", sorted[sorted.size() / 2]},
                    {"cpu_time", sorted[sorted.size() / 2]},
                    {"time_unit", unit}});
  }
  return json{{"context", {{"date", "x"}, {"num_cpus", 2}, {"library_build_type", "release"}}},
              {"benchmarks", rows}};
}

class CommandTest : public ::testing::Test {
 protected:
  CommandEntry entry(std::vector<std::string> command,
                     OutputFormat format = OutputFormat::GbenchJson) {
    CommandEntry e;
    e.name = "my-bench";
    e.command = std::move(command);
    e.format = format;
    e.timeout = 60s;
    e.kill_grace = 300ms;
    return e;
  }
  std::string file(const std::string& content) {
    const auto path = dir_ / ("f" + std::to_string(count_++));
    testing::write_file(path, content);
    return path.string();
  }
  CommandOutcome run(const CommandEntry& e, const std::vector<KnownKey>& known = {},
                     HostIdentity host = cpu_host()) {
    CommandContext context;
    context.now = test_now;
    context.probe = [host] { return host; };
    context.sampler = sampler_;
    context.sample_every = 50ms;
    context.scratch = dir_.path();
    return run_command(e, context, known);
  }
  // The one run of an execution that failed as a whole, in the fallback key.
  void expect_failed(const CommandOutcome& out, const std::string& prefix) {
    ASSERT_EQ(out.runs.size(), 1U);
    const auto& run = out.runs[0];
    EXPECT_TRUE(core::is_failure(run.run.status));
    EXPECT_EQ(reason(run).rfind(prefix, 0), 0U) << reason(run);
    EXPECT_EQ(out.error, reason(run));
    EXPECT_TRUE(core::valid_utf8(reason(run)));
    EXPECT_EQ(reason(run).find('\n'), std::string::npos);
    EXPECT_EQ(key_display(run), "my-bench/command my-bench default intel-xeon-test");
    EXPECT_NO_THROW((void)core::to_json(run).dump());
  }

  testing::TempDir dir_;
  int count_ = 0;
  GpuSampler sampler_;
};

TEST_F(CommandTest, EachResultIsARunInItsOwnKey) {
  const auto out = run(entry({"cat", file(gbench_output({{"BM_Copy/4096", {10, 11, 12}},
                                                         {"BM_Copy/65536", {100, 101, 99}}})
                                              .dump(2))}));
  ASSERT_TRUE(out.error.empty()) << out.error;
  ASSERT_EQ(out.runs.size(), 2U);
  EXPECT_EQ(key_display(out.runs[0]), "my-bench/BM_Copy my-bench arg0_4096 intel-xeon-test");
  EXPECT_EQ(key_display(out.runs[1]), "my-bench/BM_Copy my-bench arg0_65536 intel-xeon-test");
  const core::Record& r = out.runs[0];
  EXPECT_EQ(r.run.status, core::RunStatus::Passed);
  EXPECT_EQ(r.run.median, std::chrono::nanoseconds(11'000));
  EXPECT_EQ(r.run.latency("p20"), std::chrono::nanoseconds(10'400));
  EXPECT_EQ(r.run.source_native.source, "kernelwatch-command");
  EXPECT_EQ(r.run.observed_at, test_now());
  EXPECT_EQ(r.protocol.spec["harness"]["name"], "google-benchmark");
  const std::string notes = r.protocol.spec["comparability"]["notes"];
  EXPECT_NE(notes.find("format gbench-json; command: cat "), std::string::npos) << notes;
  // A changed flag is a new protocol, so a new key.
  auto other =
      entry({"cat", "-u",
             out.runs.empty() ? "" : file(gbench_output({{"BM_Copy/4096", {10, 11, 12}}}).dump())});
  const auto changed = run(other);
  ASSERT_EQ(changed.runs.size(), 1U);
  EXPECT_EQ(key_display(changed.runs[0]), key_display(out.runs[0]));
  EXPECT_NE(core::key_of(changed.runs[0])->digest(), core::key_of(r)->digest());
}

TEST_F(CommandTest, AMissingProgramIsAFailedRun) {
  expect_failed(run(entry({"/nonexistent/bench", "--benchmark_format=json"})),
                "program not found: /nonexistent/bench");
}

TEST_F(CommandTest, ANonZeroExitKeepsTheStderrTail) {
  expect_failed(
      run(entry({"/bin/sh", "-c", "for i in 1 2 3 4; do echo line $i >&2; done; exit 3"})),
      "exited with status 3: line 2 | line 3 | line 4");
}

TEST_F(CommandTest, AProgramThatNeverExitsIsKilledAtItsTimeout) {
  auto e = entry({"/bin/sh", "-c", "echo started; exec sleep 60"});
  e.timeout = 1s;
  expect_failed(run(e), "still running after its timeout of 1s: killed with everything it started");
  EXPECT_TRUE(core::is_failure(run(e).runs[0].run.status));
}

TEST_F(CommandTest, AGrandchildInItsOwnSessionHoldingThePipeIsKilled) {
  // The program exits at once; what it left in a new session holds stdout open for 60 s.
  const auto pid_file = dir_ / "grandchild";
  auto e = entry({"/bin/sh", "-c",
                  "setsid sh -c 'echo $$ > " + pid_file.string() +
                      "; exec sleep 60' & sleep 0.1; echo not json; exit 0"});
  const auto start = std::chrono::steady_clock::now();
  const auto out = run(e);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  expect_failed(out, "format mismatch (gbench-json): not Google Benchmark JSON");
  ASSERT_TRUE(std::filesystem::exists(pid_file));
  const pid_t grandchild = std::stoi(testing::read_file(pid_file));
  EXPECT_EQ(::kill(grandchild, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(CommandTest, AHundredMegabytesWithAndWithoutNewlinesAreRefusedInBoundedMemory) {
  for (const char* line : {"'x' * 1023 + '\\n'", "'x' * 1024"}) {
    auto e = entry({"python3", "-c",
                    std::string("import sys\nb = (") + line +
                        ").encode()\nfor _ in range(100 * 1024): sys.stdout.buffer.write(b)\n"});
    expect_failed(run(e), "its output is over 67108864 bytes (104857600 bytes written)");
  }
}

TEST_F(CommandTest, BytesThatAreNotUtf8AnywhereGiveAReadableReason) {
  expect_failed(
      run(entry({"python3", "-c",
                 "import sys\nsys.stdout.buffer.write(b'{\"context\": \\xff\\xfe}\\n')\n"})),
      "format mismatch (gbench-json): not Google Benchmark JSON");
  expect_failed(run(entry({"python3", "-c",
                           "import sys\nsys.stderr.buffer.write(b'bad \\xff\\xc3 "
                           "byte\\x1b[0m\\n')\nsys.exit(2)\n"})),
                "exited with status 2: bad \xEF\xBF\xBD\xEF\xBF\xBD byte [0m");
}

TEST_F(CommandTest, AFormatMismatchIsAFailedRun) {
  expect_failed(run(entry({"cat", file(R"({"machine_info": {}, "benchmarks": []})")})),
                "format mismatch (gbench-json): not Google Benchmark JSON: expected an object with "
                "\"context\" and a \"benchmarks\" array");
  expect_failed(run(entry({"echo", "[1, 2]"}, OutputFormat::PytestBenchmarkJson)),
                "format mismatch (pytest-benchmark-json): not pytest-benchmark JSON");
}

TEST_F(CommandTest, BadTimesAndUnknownUnitsAreFailedRunsInTheirKeys) {
  json negative = gbench_output({{"BM_Neg/1", {-1, -2, -3}}});
  json minutes = gbench_output({{"BM_Min/1", {1, 2, 3}}}, "min");
  json both = negative;
  for (const auto& row : minutes["benchmarks"]) both["benchmarks"].push_back(row);
  std::string text = both.dump(2);
  const auto out = run(entry({"cat", file(text)}));
  ASSERT_EQ(out.runs.size(), 2U);
  EXPECT_TRUE(core::is_failure(out.runs[0].run.status));
  EXPECT_EQ(reason(out.runs[0]).rfind("NaN, infinite, negative or zero time", 0), 0U)
      << reason(out.runs[0]);
  EXPECT_EQ(key_display(out.runs[0]), "my-bench/BM_Neg my-bench arg0_1 intel-xeon-test");
  EXPECT_EQ(reason(out.runs[1]), "unknown time_unit \"min\" (ns, us, ms, s)");
  // NaN as Google Benchmark writes it (bare, not JSON).
  text = gbench_output({{"BM_Nan/1", {1, 2, 3}}}).dump(2);
  text.replace(text.find("\"real_time\": 1.0"), 16, "\"real_time\": NaN");
  expect_failed(run(entry({"cat", file(text)})),
                "format mismatch (gbench-json): Google Benchmark JSON with a NaN or infinite time");
}

TEST_F(CommandTest, QuantilesOutOfOrderAreAFailedRun) {
  const json output = {
      {"machine_info", json::object()},
      {"version", "3.2.2"},
      {"benchmarks",
       json::array({{{"name", "test_x"},
                     {"params", nullptr},
                     {"param", nullptr},
                     {"stats", {{"median", 0.009}, {"data", {0.001, 0.002, 0.003}}}}}})}};
  const auto out = run(entry({"cat", file(output.dump())}, OutputFormat::PytestBenchmarkJson));
  ASSERT_EQ(out.runs.size(), 1U);
  EXPECT_TRUE(core::is_failure(out.runs[0].run.status));
  EXPECT_EQ(reason(out.runs[0]).rfind("quantiles out of order: p20=1.4e+06 median=9e+06", 0), 0U)
      << reason(out.runs[0]);
}

TEST_F(CommandTest, AFailedExecutionIsAFailedRunInEveryKeyItProducedBefore) {
  const auto good = run(
      entry({"cat", file(gbench_output({{"BM_A/1", {1, 2, 3}}, {"BM_B/1", {4, 5, 6}}}).dump())}));
  ASSERT_EQ(good.keys.size(), 2U);
  const auto broken = entry({"/bin/sh", "-c", "exit 1"});
  // The known keys carry their protocol: the failed runs land in exactly those keys.
  const auto failed = run(broken, good.keys);
  ASSERT_EQ(failed.runs.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(core::is_failure(failed.runs[i].run.status));
    EXPECT_EQ(reason(failed.runs[i]), "exited with status 1 (nothing on stderr)");
    EXPECT_EQ(core::key_of(failed.runs[i])->digest(), core::key_of(good.runs[i])->digest());
  }
}

TEST_F(CommandTest, TheOutputPathIsFreshAndRemovedAndTheEnvironmentMinimal) {
  ::setenv("KERNELWATCH_COMMAND_TEST_LEAK", "leaked", 1);
  auto e = entry({"/bin/sh", "-c",
                  "test ! -e \"$1\" || exit 9; "
                  "test -z \"$KERNELWATCH_COMMAND_TEST_LEAK\" || exit 8; "
                  "cat \"$2\" > \"$1\"; echo \"$1\" > \"$3\"",
                  "sh", "{out}", file(gbench_output({{"BM_A/1", {1, 2, 3}}}).dump()),
                  (dir_ / "where").string()});
  e.output = "{out}";
  e.env = {{"CUDA_LAUNCH_BLOCKING", "1"}, {"SECRET_TOKEN", "hunter2"}};
  const auto out = run(e);
  ::unsetenv("KERNELWATCH_COMMAND_TEST_LEAK");
  ASSERT_TRUE(out.error.empty()) << out.error;
  ASSERT_EQ(out.runs.size(), 1U);
  EXPECT_EQ(out.runs[0].run.status, core::RunStatus::Passed);
  const std::string where = testing::read_file(dir_ / "where");
  EXPECT_FALSE(std::filesystem::exists(
      std::filesystem::path(where.substr(0, where.size() - 1)).parent_path()));
  // The variable that changes timings is recorded with the run; the other never.
  const json env = out.runs[0].environment.document["spec"]["settings"];
  EXPECT_EQ(env, json({{"environmentVariables", {{"CUDA_LAUNCH_BLOCKING", "1"}}}}));
  EXPECT_EQ(core::to_json(out.runs[0]).dump().find("hunter2"), std::string::npos);
}

TEST_F(CommandTest, GpuSamplesWhileTheProgramRunsDecideInconclusive) {
  // No GPU here: the sampler stands in for NVML. The first sample, as the program starts, finds
  // the GPU idle with its clock parked; the later ones busy.
  const auto with_busy_clock = [&](unsigned mhz, std::uint64_t reasons) {
    int calls = 0;
    sampler_ = [&calls, mhz, reasons](int) {
      kernels::GpuSample s;
      s.sm_clock_max_mhz = 1980;
      s.other_compute_processes = 0;
      if (calls++ == 0) {
        s.sm_clock_mhz = 345;
        s.clock_event_reasons = 0x1;  // GPU idle
      } else {
        s.sm_clock_mhz = mhz;
        s.clock_event_reasons = reasons;
      }
      return s;
    };
    return run(entry({"/bin/sh", "-c",
                      "sleep 0.3; cat " + file(gbench_output({{"BM_A/1", {1, 2, 3}}}).dump())}));
  };
  const auto parked_then_busy = with_busy_clock(1980, 0x0);
  ASSERT_EQ(parked_then_busy.runs.size(), 1U);
  EXPECT_EQ(parked_then_busy.runs[0].run.status, core::RunStatus::Passed)
      << reason(parked_then_busy.runs[0]);
  const auto throttled = with_busy_clock(900, 0x4);  // software power cap
  ASSERT_EQ(throttled.runs.size(), 1U);
  EXPECT_EQ(throttled.runs[0].run.status, core::RunStatus::IncompleteEvidence);
  EXPECT_EQ(reason(throttled.runs[0]).rfind("SM clock 900 MHz under 75%", 0), 0U)
      << reason(throttled.runs[0]);
}

TEST_F(CommandTest, AnOutputsDeviceIsCheckedAgainstTheDaemonsProbe) {
  const json nvbench = {
      {"devices", json::array({{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}})},
      {"benchmarks",
       json::array(
           {{{"name", "copy"},
             {"states",
              json::array(
                  {{{"device", 0},
                    {"axis_values", json::array()},
                    {"is_skipped", false},
                    {"summaries",
                     json::array({{{"tag", "nv/cold/time/gpu/mean"},
                                   {"hint", "duration"},
                                   {"data", json::array({{{"name", "value"},
                                                          {"type", "float64"},
                                                          {"value", "2e-05"}}})}}})}}})}}})}};
  const auto e = entry({"cat", file(nvbench.dump())}, OutputFormat::NvbenchJson);
  const auto on_cpu = run(e);
  ASSERT_EQ(on_cpu.runs.size(), 1U);
  EXPECT_TRUE(core::is_failure(on_cpu.runs[0].run.status));
  EXPECT_EQ(reason(on_cpu.runs[0]),
            "the output says it ran on \"NVIDIA H100 80GB HBM3\", the daemon probed \"Intel Xeon "
            "Test\"");
  const auto on_h100 = run(e, {}, h100_host());
  ASSERT_EQ(on_h100.runs.size(), 1U);
  EXPECT_EQ(on_h100.runs[0].run.status, core::RunStatus::Passed) << reason(on_h100.runs[0]);
  EXPECT_EQ(key_display(on_h100.runs[0]), "my-bench/copy my-bench default nvidia-h100-80gb-hbm3");
  EXPECT_EQ(on_h100.runs[0].run.primary_statistic, "mean");
  EXPECT_EQ(on_h100.runs[0].run.median, std::chrono::nanoseconds(20'000));
}

TEST_F(CommandTest, KernelindexLinesAmongLogLinesKeepTheirKeyOnTheDaemonsHost) {
  const json record = json::parse(testing::read_file(
      testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json")));
  const std::string line = file("KERNELINDEX_RUN: " + record.dump() + "\n");
  const auto out = run(entry({"/bin/sh", "-c", "echo warming up; cat " + line + "; echo done"},
                             OutputFormat::KernelindexJsonl),
                       {}, h100_host());
  ASSERT_TRUE(out.error.empty()) << out.error;
  ASSERT_EQ(out.runs.size(), 1U);
  EXPECT_EQ(key_display(out.runs[0]),
            "tvd/backward torch tokens16384-vocab65536-fp32 nvidia-h100-80gb-hbm3");
  EXPECT_EQ(out.runs[0].run.source_native.source, "kernelwatch-command");
}

}  // namespace
}  // namespace kernelwatch::runners

namespace kernelwatch::runners {
namespace {

// `discover --list` for pytest-benchmark: the real pytest (Debian's python3-pytest-benchmark)
// collects the suite's cases with --collect-only; a slowdown a run would need hours for proves
// nothing runs. (Google Benchmark's listing: CommandE2E, with the program the daemon tests build.)
TEST(CommandList, PytestCollectsItsCasesWithoutRunningThem) {
  testing::TempDir dir;
  testing::write_file(dir / "slowdown", "100000000\n");
  CommandEntry e;
  e.name = "py";
  e.format = OutputFormat::PytestBenchmarkJson;
  e.output = "{out}";
  e.command = {
      "/usr/bin/python3",
      "-m",
      "pytest",
      "-q",
      "-p",
      "no:cacheprovider",
      "--benchmark-json={out}",
      (testing::data_dir().parent_path() / "tests/daemon/programs/test_pytest_saxpy.py").string()};
  e.env = {{"KW_SLOWDOWN_FILE", (dir / "slowdown").string()}};
  e.timeout = 60s;
  CommandContext context;
  context.now = test_now;
  context.probe = [] { return cpu_host(); };
  context.scratch = dir.path();
  const auto cases = list_command(e, context);
  ASSERT_TRUE(cases) << cases.error().message;
  ASSERT_EQ(cases->size(), 2U);
  EXPECT_EQ((*cases)[0].case_id, "test_saxpy[2000]");
  EXPECT_EQ((*cases)[0].benchmark, "py/test_saxpy");
  EXPECT_EQ((*cases)[0].provider, "py");
  EXPECT_EQ((*cases)[0].workload, "");  // its parameter names come with a run
  EXPECT_EQ((*cases)[1].case_id, "test_saxpy[8000]");
  // Formats whose harness has no listing say the entry must run.
  e.format = OutputFormat::NvbenchJson;
  const auto refused = list_command(e, context);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "nvbench-json output cannot list its cases without running them: run discover "
            "without --list to see its keys");
}

TEST(CommandList, APytestParameterIdNamesTheWorkloadOfItsRun) {
  EXPECT_TRUE(pytest_id_matches("test_saxpy[2000]", "n_2000"));
  EXPECT_TRUE(pytest_id_matches("test_rms_norm[4096-bf16]", "dtype_bf16-hidden_4096"));
  EXPECT_TRUE(pytest_id_matches("test_x[Float32]", "dtype_float32"));
  EXPECT_FALSE(pytest_id_matches("test_saxpy[2000]", "n_8000"));
  EXPECT_FALSE(pytest_id_matches("test_rms_norm[4096-bf16]", "hidden_4096"));
  EXPECT_FALSE(pytest_id_matches("test_saxpy[2000]", "default"));
}

}  // namespace
}  // namespace kernelwatch::runners
