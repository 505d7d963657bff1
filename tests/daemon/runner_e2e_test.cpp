// The real kernelwatch daemon running external benchmark programs (issue #24's probe of the
// liger-bench runner): output that is not UTF-8, 100 MB with and without newlines, quantiles out
// of order, and a daemon killed with SIGKILL or stopped with SIGTERM during a case. The runners
// are fake liger_bench.py scripts the tests write (no GPU, no torch here); the system python3
// runs them. Nothing sleeps to synchronise: the tests poll files, pids and the HTTP API.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json_limits.hpp"
#include "core/record.hpp"
#include "tests/daemon/support/watching_daemon.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::eventually;
using testing::http;
using testing::reason_of;
using namespace std::chrono_literals;

// The fake's preamble: reads the request like liger_bench.py.
const std::string kPreamble = R"(import json, os, subprocess, sys, time
cases = json.load(sys.stdin)["cases"]
def passed(case, p50, p20, p80):
    print(json.dumps({"case": case, "status": "passed", "ms": {"p50": p50, "p20": p20, "p80": p80},
        "device": {"name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "index": 0},
        "versions": {"torch": "2.7.0", "liger_kernel": "0.6.1"}}), flush=True)
)";

// A liger-bench entry of one kernel and pass whose runner is the fake with this body.
struct FakeEntry {
  std::string kernel;
  std::string pass;
  std::string body;
};

json liger_entries(const std::filesystem::path& dir, const std::vector<FakeEntry>& entries) {
  json benchmarks = json::array();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto script = dir / ("fake" + std::to_string(i) + ".py");
    testing::write_file(script, kPreamble + entries[i].body);
    benchmarks.push_back({{"runner", "liger-bench"},
                          {"python", "python3"},
                          {"script", script.string()},
                          {"kernel", entries[i].kernel},
                          {"pass", entries[i].pass},
                          {"providers", {"liger"}},
                          {"workloads",
                           {entries[i].kernel == "tvd" ? "tokens16384-vocab65536-fp32"
                                                       : "hidden16384-rows4096-fp32"}},
                          {"timeout", "120s"}});
  }
  return benchmarks;
}

// A daemon whose liger-bench entries run the fakes.
class RunnerDaemon : public testing::WatchingDaemon {
 public:
  RunnerDaemon(const testing::TempDir& dir, const std::vector<FakeEntry>& entries)
      : WatchingDaemon(dir.path(), liger_entries(dir.path(), entries)) {}
};

std::string benchmark_of(const json& record) {
  return record["run"]["spec"]["sourceNative"]["benchmark"];
}

bool gone(pid_t pid) {
  return ::kill(pid, 0) == -1 && errno == ESRCH;
}

// A status line's value in kB ("VmHWM:   12345 kB").
long status_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// The process's open descriptors other than sockets (the test's own HTTP connections come and
// go): pipes to programs, files; one that a cycle leaves behind is a leak.
std::vector<std::string> open_descriptors(pid_t pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(it->path(), link_ec).string();
    // A descriptor closed between the listing and its readlink is not held: only what can be
    // read is compared. Sockets come and go with the test's own HTTP requests.
    if (link_ec || target.rfind("socket:", 0) == 0) continue;
    out.push_back(it->path().filename().string() + " -> " + target);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// The children of a process (every thread's), from /proc.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  const auto tasks = std::filesystem::path("/proc") / std::to_string(pid) / "task";
  for (auto it = std::filesystem::directory_iterator(tasks, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::istringstream in(testing::read_file(it->path() / "children"));
    for (pid_t child; in >> child;) out.push_back(child);
  }
  return out;
}

TEST(RunnerE2E, ProbeOutputsAreFailedRunsWithReadableReasonsAndTheDaemonLives) {
  testing::TempDir dir;
  RunnerDaemon daemon(
      dir,
      {// A partial last line with 0xff.
       {"tvd", "forward",
        "sys.stdout.buffer.write(b'{\"case\": \\xff\\xfe'); sys.stdout.flush()\n"},
       // A character cut at the 120-byte excerpt of a partial line.
       {"tvd", "backward",
        "sys.stdout.buffer.write(b'x' * 119 + '\\u00e9'.encode() + b'tail'); sys.stdout.flush()\n"},
       // Invalid bytes on stderr with a non-zero exit.
       {"layer_norm", "forward",
        "sys.stderr.buffer.write(b'oops \\xff\\xfe\\xc3\\n'); sys.stderr.flush()\nos._exit(1)\n"},
       // p20 > median > p80.
       {"layer_norm", "backward", "passed(cases[0], 1.0, 1.2, 0.8)\n"},
       // 100 MB without a newline.
       {"tvd", "full",
        "chunk = b'\\xff' * (1 << 20)\n"
        "for _ in range(100): sys.stdout.buffer.write(chunk)\n"
        "sys.stdout.flush()\n"},
       // 100 MB of lines that are no result.
       {"layer_norm", "full",
        "line = b'\\xfe' * 1023 + b'\\n'\n"
        "for _ in range(100 * 1024): sys.stdout.buffer.write(line)\n"
        "sys.stdout.flush()\n"}});
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.child().log();
  const pid_t pid = daemon.child().pid();
  const json runs = daemon.wait_for_runs(6);
  ASSERT_EQ(runs.size(), 6U) << daemon.child().log();
  std::map<std::string, std::string> reasons;
  for (const auto& r : runs) {
    const auto status = core::parse_run_status(r["run"]["spec"]["status"].get<std::string>());
    EXPECT_TRUE(status && core::is_failure(*status)) << r.dump();
    const std::string why = reason_of(r);
    EXPECT_TRUE(core::valid_utf8(why));
    EXPECT_EQ(why.find('\n'), std::string::npos);
    EXPECT_LE(why.size(), 1000U);
    reasons[benchmark_of(r)] = why;
  }
  EXPECT_EQ(reasons["tvd/forward"].rfind(
                "malformed runner output (a line without its newline): {\"case\": \xEF\xBF\xBD", 0),
            0U)
      << reasons["tvd/forward"];
  EXPECT_EQ(reasons["tvd/backward"].rfind(
                "malformed runner output (a line without its newline): xxxxxxxx", 0),
            0U)
      << reasons["tvd/backward"];
  EXPECT_EQ(reasons["layer_norm/forward"],
            "runner exited with status 1: oops \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(reasons["layer_norm/backward"],
            "quantiles out of order: p50=1 p20=1.2 p80=0.8 ms (p20 <= p50 <= p80 expected)");
  EXPECT_EQ(reasons["tvd/full"],
            "malformed runner output: 1 stdout line(s) longer than 65536 bytes, dropped unread");
  EXPECT_EQ(reasons["layer_norm/full"].rfind("malformed runner output (not a JSON object): ", 0),
            0U)
      << reasons["layer_norm/full"];

  // Alive, answering, nothing left behind: no child (no zombie), the same descriptors after a
  // second cycle as after the first, and memory far below the 200 MB the runners printed.
  EXPECT_EQ(http(daemon.port(), "GET", "/healthz").status, 200);
  ASSERT_TRUE(eventually([&] { return daemon.cycles_done() >= 1; }));
  EXPECT_TRUE(children_of(pid).empty());
  const auto descriptors = open_descriptors(pid);
  ASSERT_EQ(
      http(daemon.port(), "POST", "/api/v1/trigger", "{}", testing::WatchingDaemon::kToken).status,
      202);
  ASSERT_EQ(daemon.wait_for_runs(12).size(), 12U) << daemon.child().log();
  ASSERT_TRUE(eventually([&] { return daemon.cycles_done() >= 2; }));
  EXPECT_TRUE(children_of(pid).empty());
  EXPECT_EQ(joined(open_descriptors(pid)), joined(descriptors));
  const long peak_kb = status_kb(pid, "VmHWM");
  std::printf("daemon peak RSS after two cycles of 200 MB of runner output: %ld kB\n", peak_kb);
  EXPECT_GT(peak_kb, 0);
  EXPECT_LT(peak_kb, 100 * 1024);
  // It starts again on what it stored, and runs the cycle again (run_at_start).
  daemon.child().stop();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.child().log();
  ASSERT_EQ(daemon.wait_for_runs(18).size(), 18U) << daemon.child().log();
  daemon.child().stop();
}

// The fake's body: starts a grandchild in its process group and one in its own session, writes
// the three pids to `pids`, and runs for ten minutes: it becomes `sleep 600` (same pid), since
// Python's time.sleep fails at once with EINVAL under .ci/run's faketime (libfaketime and
// clock_nanosleep on the monotonic clock), which let the runner exit before the test looked.
std::string hanging_runner(const std::filesystem::path& pids) {
  return "g = subprocess.Popen(['sleep', '600'])\n"
         "s = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
         "with open('" +
         pids.string() + ".tmp', 'w') as f: f.write(f'{os.getpid()} {g.pid} {s.pid}\\n')\n" +
         "os.rename('" + pids.string() + ".tmp', '" + pids.string() + "')\n" +
         "os.execvp('sleep', ['sleep', '600'])\n";
}

// Starts the daemon on hanging_runner(pids) and waits until the runner wrote its pids: the
// runner's, its grandchild's and its grandchild's in its own session, all running.
std::vector<pid_t> start_during_a_case(RunnerDaemon& daemon, const std::filesystem::path& pids) {
  daemon.start();
  EXPECT_NE(daemon.port(), 0) << daemon.child().log();
  EXPECT_TRUE(eventually([&] { return std::filesystem::exists(pids); })) << daemon.child().log();
  std::istringstream in(std::filesystem::exists(pids) ? testing::read_file(pids) : "");
  std::vector<pid_t> out;
  for (pid_t pid; in >> pid;) out.push_back(pid);
  EXPECT_EQ(out.size(), 3U);
  for (const pid_t p : out) EXPECT_FALSE(gone(p)) << p;
  return out;
}

TEST(RunnerE2E, ARunnerAndItsGrandchildrenDieWithADaemonKilledDuringACase) {
  for (int round = 0; round < 3; ++round) {
    testing::TempDir dir;
    const auto pids_file = dir / "pids";
    RunnerDaemon daemon(dir, {{"tvd", "backward", hanging_runner(pids_file)}});
    const auto pids = start_during_a_case(daemon, pids_file);
    ASSERT_EQ(pids.size(), 3U);
    daemon.child().kill_hard();
    EXPECT_TRUE(eventually([&] { return gone(pids[0]) && gone(pids[1]) && gone(pids[2]); }, 20s))
        << "round " << round << ": runner " << pids[0] << ", grandchild " << pids[1]
        << ", grandchild in its own session " << pids[2] << " outlived the daemon";
  }
}

TEST(RunnerE2E, ASigtermDuringACaseStopsTheDaemonAndItsRunnerAtOnce) {
  testing::TempDir dir;
  const auto pids_file = dir / "pids";
  RunnerDaemon daemon(dir, {{"tvd", "backward", hanging_runner(pids_file)}});
  const auto pids = start_during_a_case(daemon, pids_file);
  ASSERT_EQ(pids.size(), 3U);
  const auto start = std::chrono::steady_clock::now();
  daemon.child().stop(10s);  // exit 0 within 10 s
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("SIGTERM during a case: the daemon exited after %.2f s\n", seconds);
  EXPECT_LT(seconds, 5.0) << daemon.child().log();
  for (const pid_t p : pids) EXPECT_TRUE(gone(p)) << p;
  EXPECT_EQ(daemon.child().log().find("stopped without waiting"), std::string::npos)
      << daemon.child().log();
}

// Google Benchmark JSON of one benchmark's three repetitions with these real times and unit.
json gbench_rows(const std::string& name, std::vector<double> times, const std::string& unit) {
  json rows = json::array();
  for (std::size_t i = 0; i < times.size(); ++i) {
    rows.push_back({{"name", name},
                    {"run_name", name},
                    {"run_type", "iteration"},
                    {"repetitions", times.size()},
                    {"repetition_index", i},
                    {"threads", 1},
                    {"iterations", 10},
                    {"real_time", times[i]},
                    {"cpu_time", times[i]},
                    {"time_unit", unit}});
  }
  return rows;
}

TEST(RunnerE2E, EveryFailureOfACommandEntryIsAFailedRunWithItsReasonAndTheDaemonLives) {
  testing::TempDir dir;
  json bad_times = {{"context", {{"library_build_type", "release"}}},
                    {"benchmarks", gbench_rows("BM_Neg/1", {-1, -2, -3}, "ns")}};
  for (const auto& row : gbench_rows("BM_Min/1", {1, 2, 3}, "min")) {
    bad_times["benchmarks"].push_back(row);
  }
  testing::write_file(dir / "bad_times.json", bad_times.dump(2));
  testing::write_file(
      dir / "order.json",
      json{{"machine_info", json::object()},
           {"version", "3.2.2"},
           {"benchmarks",
            json::array({{{"name", "test_x"},
                          {"params", nullptr},
                          {"param", nullptr},
                          {"stats", {{"median", 0.009}, {"data", {0.001, 0.002, 0.003}}}}}})}}
          .dump());
  testing::write_file(dir / "pytest.json", R"({"machine_info": {}, "benchmarks": []})");
  const auto entry = [](const std::string& name, json command, const std::string& format,
                        const std::string& timeout = "2m") {
    return json{{"runner", "command"},
                {"name", name},
                {"command", std::move(command)},
                {"format", format},
                {"timeout", timeout}};
  };
  const std::string flood =
      "import sys\nb = (LINE).encode()\nfor _ in range(100 * 1024): sys.stdout.buffer.write(b)\n";
  const auto flood_of = [&](const std::string& line) {
    std::string body = flood;
    body.replace(body.find("LINE"), 4, line);
    return body;
  };
  testing::WatchingDaemon daemon(
      dir.path(),
      json::array(
          {entry("missing", {"/nonexistent/bench"}, "gbench-json"),
           entry("exit", {"/bin/sh", "-c", "for i in 1 2 3 4; do echo line $i >&2; done; exit 3"},
                 "gbench-json"),
           // Never exits, and leaves a grandchild in its own session holding the pipes.
           entry("hang", {"/bin/sh", "-c", "setsid sleep 600 & exec sleep 600"}, "gbench-json",
                 "2s"),
           entry("flood", {"python3", "-c", flood_of("'x' * 1024")}, "gbench-json"),
           entry("flood-lines", {"python3", "-c", flood_of("'x' * 1023 + '\\n'")}, "gbench-json"),
           entry("utf8",
                 {"python3", "-c",
                  "import sys\nsys.stdout.buffer.write(b'{\\xff\\xfe')\n"
                  "sys.stderr.buffer.write(b'bad \\xff\\xc3 byte\\x1b[0m\\n')\nsys.exit(2)\n"},
                 "gbench-json"),
           entry("mismatch", {"cat", (dir / "pytest.json").string()}, "gbench-json"),
           entry("badtimes", {"cat", (dir / "bad_times.json").string()}, "gbench-json"),
           entry("order", {"cat", (dir / "order.json").string()}, "pytest-benchmark-json")}));
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const pid_t pid = daemon.child().pid();
  const json runs = daemon.wait_for_runs(10);
  ASSERT_EQ(runs.size(), 10U) << runs.dump(2) << daemon.log();
  std::map<std::string, std::string> reasons;
  std::map<std::string, std::string> statuses;
  for (const auto& r : runs) {
    const std::string why = reason_of(r);
    EXPECT_TRUE(core::valid_utf8(why)) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_LE(why.size(), 1000U);
    reasons[benchmark_of(r)] = why;
    statuses[benchmark_of(r)] = r["run"]["spec"]["status"];
  }
  for (const auto& [benchmark, status] : statuses) {
    const auto parsed = core::parse_run_status(status);
    EXPECT_TRUE(parsed && core::is_failure(*parsed)) << benchmark << ": " << status;
  }
  EXPECT_EQ(reasons["missing/command"], "program not found: /nonexistent/bench");
  EXPECT_EQ(reasons["exit/command"], "exited with status 3: line 2 | line 3 | line 4");
  EXPECT_EQ(statuses["hang/command"], "timeout");
  EXPECT_EQ(reasons["hang/command"].rfind(
                "still running after its timeout of 2s: killed with everything it started", 0),
            0U)
      << reasons["hang/command"];
  EXPECT_EQ(reasons["flood/command"],
            "its output is over 67108864 bytes (104857600 bytes written): not parsed");
  EXPECT_EQ(reasons["flood-lines/command"],
            "its output is over 67108864 bytes (104857600 bytes written): not parsed");
  EXPECT_EQ(reasons["utf8/command"], "exited with status 2: bad \xEF\xBF\xBD\xEF\xBF\xBD byte [0m");
  EXPECT_EQ(reasons["mismatch/command"].rfind(
                "format mismatch (gbench-json): not Google Benchmark JSON", 0),
            0U)
      << reasons["mismatch/command"];
  EXPECT_EQ(reasons["badtimes/BM_Neg"].rfind("NaN, infinite, negative or zero time", 0), 0U)
      << reasons["badtimes/BM_Neg"];
  EXPECT_EQ(reasons["badtimes/BM_Min"], "unknown time_unit \"min\" (ns, us, ms, s)");
  EXPECT_EQ(reasons["order/test_x"].rfind("quantiles out of order: p20=1.4e+06 median=9e+06", 0),
            0U)
      << reasons["order/test_x"];

  // Alive, nothing left behind after a second cycle: no child (no zombie, no grandchild of the
  // hanging entry), the same descriptors, memory bounded by the 64 MiB kept of an output.
  EXPECT_EQ(http(daemon.port(), "GET", "/healthz").status, 200);
  ASSERT_TRUE(eventually([&] { return daemon.cycles_done() >= 1; }));
  EXPECT_TRUE(children_of(pid).empty());
  const auto descriptors = open_descriptors(pid);
  ASSERT_TRUE(daemon.run_cycle()) << daemon.log();
  ASSERT_EQ(daemon.wait_for_runs(20).size(), 20U) << daemon.log();
  EXPECT_TRUE(children_of(pid).empty());
  EXPECT_EQ(joined(open_descriptors(pid)), joined(descriptors));
  const long peak_kb = status_kb(pid, "VmHWM");
  std::printf("daemon peak RSS after two cycles of 2 x 100 MB of program output: %ld kB\n",
              peak_kb);
  EXPECT_GT(peak_kb, 0);
  EXPECT_LT(peak_kb, 256 * 1024);
  daemon.child().stop();
}

}  // namespace
}  // namespace kernelwatch
