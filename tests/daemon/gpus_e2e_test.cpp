// Runs per GPU and siblings as controls through the real daemon (issue #27), on a machine without
// a GPU: a FAKE 8-GPU host. KERNELWATCH_FAKE_GPUS names a device list that stands in for NVML
// (which cannot run here), and a `command` entry runs tests/daemon/programs/fake_gpu_bench.py, a
// stand-in for a GPU benchmark that reads CUDA_VISIBLE_DEVICES and prints fixed Google Benchmark
// times, scaled per GPU by a file the test writes. Cycles are triggered through the API and
// counted from the log; nothing sleeps to synchronise.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/daemon/support/posted_record.hpp"
#include "tests/daemon/support/watching_daemon.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/conformance.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kGpus = 8;
constexpr int kBenchmarks = 9;

std::string uuid_of(int gpu) {
  return "GPU-0000000" + std::to_string(gpu) + "-fake-4e6f-8d1a-h100sxm5x8";
}

// The fake host: eight identical H100s, as NVML would list them.
json fake_gpus() {
  json out = json::array();
  for (int i = 0; i < kGpus; ++i) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x19 + 0x10 * i);
    out.push_back({{"index", i},
                   {"uuid", uuid_of(i)},
                   {"pci_bus_id", bus},
                   {"name", "NVIDIA H100 80GB HBM3"},
                   {"compute_major", 9},
                   {"compute_minor", 0}});
  }
  return out;
}

// The daemon with one command entry on every GPU of the fake host (`gpus` left at "all"), unless
// `command` is false, and the `extra` entries.
class FakeGpuHost {
 public:
  explicit FakeGpuHost(json extra = json::array(), json notifiers = json::array(),
                       bool command = true)
      : devices_(dir_ / "fake-nvml-devices.json"),
        speeds_(dir_ / "speeds.json"),
        daemon_(dir_.path(), entries(devices_, speeds_, std::move(extra), command),
                json{{"confirm_reruns", 1}}, "1h", std::move(notifiers)) {
    testing::write_file(devices_, fake_gpus().dump(2));
    set_speeds(json::object());
    ::setenv("KERNELWATCH_FAKE_GPUS", devices_.c_str(), 1);
  }
  ~FakeGpuHost() { ::unsetenv("KERNELWATCH_FAKE_GPUS"); }

  static json entries(const std::filesystem::path& devices, const std::filesystem::path& speeds,
                      json extra, bool command) {
    json out = json::array();
    if (command) {
      out = json::array(
          {{{"runner", "command"},
            {"name", "fakegpu"},
            {"command", {"/usr/bin/python3", program().string()}},
            {"format", "gbench-json"},
            {"env",
             {{"KERNELWATCH_FAKE_GPUS", devices.string()}, {"KW_GPU_SPEEDS", speeds.string()}}},
            {"timeout", "2m"}}});
    }
    for (auto& entry : extra) out.push_back(std::move(entry));
    return out;
  }
  static std::filesystem::path program() {
    return testing::data_dir().parent_path() / "tests/daemon/programs/fake_gpu_bench.py";
  }
  void set_speeds(const json& speeds) { testing::write_file(speeds_, speeds.dump()); }
  testing::WatchingDaemon& daemon() { return daemon_; }
  const testing::TempDir& dir() const { return dir_; }

 private:
  testing::TempDir dir_;
  std::filesystem::path devices_;
  std::filesystem::path speeds_;
  testing::WatchingDaemon daemon_;
};

std::string label(const json& record, const std::string& name) {
  const json& labels = record["run"]["metadata"]["labels"];
  return labels.contains(name) ? labels[name].get<std::string>() : std::string();
}

TEST(GpusE2E, EachFakeGpuRunsItsOwnProcessAndEveryRunNamesItsHostAndGpu) {
  FakeGpuHost host;
  auto& daemon = host.daemon();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  EXPECT_NE(daemon.log().find("KERNELWATCH_FAKE_GPUS is set"), std::string::npos) << daemon.log();

  const json runs = daemon.runs();
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kGpus * kBenchmarks)) << daemon.log();
  // Identical GPUs share their keys: 9 keys, not 72.
  EXPECT_EQ(daemon.get("/api/v1/keys").size(), static_cast<std::size_t>(kBenchmarks));
  std::map<std::string, int> per_gpu;
  std::set<std::string> hosts;
  for (const auto& run : runs) {
    EXPECT_EQ(run["run"]["spec"]["status"], "passed") << run.dump();
    const std::string gpu = label(run, "gpu_index");
    ++per_gpu[gpu];
    hosts.insert(label(run, "host"));
    EXPECT_EQ(label(run, "gpu_uuid"), uuid_of(std::stoi(gpu))) << run.dump();
    EXPECT_FALSE(label(run, "pci_bus_id").empty()) << run.dump();
    EXPECT_EQ(run["environment"]["spec"]["hardware"]["product"], "NVIDIA H100") << run.dump();
    // CUDA_VISIBLE_DEVICES is the daemon's choice of GPU, not a setting of the run.
    EXPECT_FALSE(run["environment"].dump().find("CUDA_VISIBLE_DEVICES") != std::string::npos);
  }
  ASSERT_EQ(per_gpu.size(), static_cast<std::size_t>(kGpus));
  for (const auto& [gpu, count] : per_gpu) EXPECT_EQ(count, kBenchmarks) << "GPU " << gpu;
  ASSERT_EQ(hosts.size(), 1U);
  EXPECT_FALSE(hosts.begin()->empty());

  KW_REQUIRE_JSONSCHEMA();
  const auto checked = testing::check_against_schemas(runs, host.dir().path());
  EXPECT_TRUE(checked.valid) << checked.report;
  daemon.child().stop(20s);
}

// kernelwatch's own kernels on every GPU: each case on each GPU a child `kernelwatch bench` that
// sees only that GPU (here the CPU backend stands in for CUDA, as the device list does for NVML),
// each run in the key of the same case run in one process and labelled with its GPU; `gpus`
// picks GPUs by index or UUID.
TEST(GpusE2E, OwnKernelsRunOnEveryFakeGpuEachRunInTheKeyOfTheCaseRunInOneProcess) {
  const json own = json::array({{{"kernel", "tvd"},
                                 {"pass", "forward"},
                                 {"providers", {"kernelwatch-fused"}},
                                 {"workloads", {"tokens1024-vocab4096-fp32"}}},
                                {{"kernel", "layer_norm"},
                                 {"pass", "forward"},
                                 {"providers", {"kernelwatch-fused"}},
                                 {"workloads", {"hidden2048-rows2048-fp32"}},
                                 {"gpus", {2, uuid_of(5)}}}});
  FakeGpuHost host(own, json::array(), /*command=*/false);
  auto& daemon = host.daemon();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();

  // workload -> GPU -> its runs. A breach in the cycle (eight runs of a new key, judged as they
  // come, on a loaded CPU) is confirmed by rerunning the case on every GPU: each GPU as often.
  std::map<std::string, std::map<std::string, int>> runs_on;
  std::map<std::string, json> digests;  // workload -> the digests of its runs
  for (const auto& run : daemon.runs()) {
    if (run["run"]["spec"]["sourceNative"]["source"] != "kernelwatch") continue;
    const std::string workload = label(run, "workload");
    const std::string gpu = label(run, "gpu_index");
    EXPECT_EQ(run["run"]["spec"]["status"], "passed") << run.dump();
    ++runs_on[workload][gpu];
    EXPECT_EQ(label(run, "gpu_uuid"), uuid_of(std::stoi(gpu))) << run.dump();
    EXPECT_FALSE(label(run, "pci_bus_id").empty()) << run.dump();
    const json& spec = run["run"]["spec"];
    const json these = {spec["protocolDigest"], spec["workloadDigest"], spec["environmentDigest"],
                        spec["implementationDigest"]};
    if (digests.contains(workload)) {
      EXPECT_EQ(these, digests[workload]) << "GPU " << gpu;
    }
    digests[workload] = these;
  }
  const auto gpus_of = [&](const std::string& workload) {
    std::set<std::string> gpus;
    for (const auto& [gpu, count] : runs_on[workload]) {
      gpus.insert(gpu);
      EXPECT_EQ(count, runs_on[workload].begin()->second) << workload << " GPU " << gpu;
    }
    return gpus;
  };
  EXPECT_EQ(gpus_of("tokens1024-vocab4096-fp32"),
            (std::set<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}))
      << daemon.log();
  EXPECT_EQ(gpus_of("hidden2048-rows2048-fp32"), (std::set<std::string>{"2", "5"})) << daemon.log();

  // The same cases run in one process (the daemon's harness, as `kernelwatch bench`) are in the
  // same keys: runs on any GPU and runs in one process share their band.
  for (const auto& [kernel, workload] : {std::pair{"tvd", "tokens1024-vocab4096-fp32"},
                                         {"layer_norm", "hidden2048-rows2048-fp32"}}) {
    const auto bench =
        testing::run_kernelwatch({"bench", "--json", "--kernel", kernel, "--pass", "forward",
                                  "--provider", "kernelwatch-fused", "--backend", "cpu",
                                  "--workload", workload, "--warmup-ms", "25", "--rep-ms", "100"});
    ASSERT_EQ(bench.exit_code, 0) << bench.err;
    const json printed = json::parse(bench.out);
    const json& spec = printed.at(0).at("run").at("spec");
    EXPECT_EQ(digests[workload], json({spec["protocolDigest"], spec["workloadDigest"],
                                       spec["environmentDigest"], spec["implementationDigest"]}))
        << workload;
  }
  daemon.child().stop(20s);
}

// Runs `baseline` cycles at one speed, then one cycle with `speeds`.
void baseline_then(FakeGpuHost& host, const json& speeds) {
  auto& daemon = host.daemon();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  ASSERT_TRUE(daemon.run_cycle()) << daemon.log();
  ASSERT_TRUE(daemon.get("/api/v1/alerts").empty()) << daemon.log();
  host.set_speeds(speeds);
  ASSERT_TRUE(daemon.run_cycle()) << daemon.log();
}

TEST(GpusE2E, OneFakeGpuTwelvePercentSlowerIsOneGpuAlertAndNoKeyAlert) {
  FakeGpuHost host;
  baseline_then(host, json{{uuid_of(3), 1.12}});
  const json alerts = host.daemon().get("/api/v1/alerts");
  ASSERT_EQ(alerts.size(), 1U) << alerts.dump(2) << host.daemon().log();
  const json& alert = alerts[0];
  EXPECT_EQ(alert["kind"], "environment") << alert.dump(2);
  EXPECT_TRUE(!alert.contains("members") || alert["members"].empty()) << alert.dump(2);
  const std::string explanation = alert.value("explanation", "");
  EXPECT_NE(explanation.find("GPU 3 (UUID " + uuid_of(3) + ") of host "), std::string::npos)
      << explanation;
  EXPECT_NE(explanation.find("is 12.0% slower than its 7 siblings on 9 of 9 benchmarks"),
            std::string::npos)
      << explanation;
  std::printf("%s\n", explanation.c_str());

  // /metrics names the GPU as dcgm-exporter does; promtool accepts the body.
  const auto metrics = testing::http(host.daemon().port(), "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::string gpu3 = "gpu=\"3\",UUID=\"" + uuid_of(3) + "\"";
  EXPECT_NE(metrics.body.find("kernelwatch_gpu_out_of_line{Hostname=\""), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find(gpu3 + ",pci_bus_id=\"00000000:49:00.0\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("kernelwatch_gpu_runs_total{Hostname="), std::string::npos);
  if (const auto promtool = testing::find_program("promtool")) {
    testing::write_file(host.dir() / "metrics.txt", metrics.body);
    const auto check = testing::run_process(
        "/bin/sh", {"-c", "exec \"$0\" check metrics < \"$1\"", promtool->string(),
                    (host.dir() / "metrics.txt").string()});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }

  // Back in line: the one alert resolves; still no key alert.
  host.set_speeds(json::object());
  ASSERT_TRUE(host.daemon().run_cycle()) << host.daemon().log();
  const json after = host.daemon().get("/api/v1/alerts");
  ASSERT_EQ(after.size(), 1U) << after.dump(2);
  EXPECT_EQ(after[0]["state"], "resolved") << after.dump(2);
  host.daemon().child().stop(20s);
}

// GPUs 3 and 4 come one after the other in each key's series of a cycle: GPU 4's breach must not
// confirm GPU 3's as a step of the code. Two GPU alerts, no key alert, this cycle and the next.
TEST(GpusE2E, TwoFakeGpusNextToEachOtherTwelvePercentSlowerAreTwoGpuAlertsAndNoKeyStep) {
  FakeGpuHost host;
  baseline_then(host, json{{uuid_of(3), 1.12}, {uuid_of(4), 1.12}});
  auto& daemon = host.daemon();
  ASSERT_TRUE(daemon.run_cycle()) << daemon.log();
  const json alerts = daemon.get("/api/v1/alerts");
  ASSERT_EQ(alerts.size(), 2U) << alerts.dump(2) << daemon.log();
  std::set<std::string> gpus;
  for (const auto& alert : alerts) {
    EXPECT_EQ(alert["kind"], "environment") << alert.dump(2);
    EXPECT_TRUE(alert["members"].empty()) << alert.dump(2);
    EXPECT_EQ(alert["state"], "firing") << alert.dump(2);
    const std::string explanation = alert.value("explanation", "");
    EXPECT_NE(explanation.find("slower than its 7 siblings on 9 of 9 benchmarks"),
              std::string::npos)
        << explanation;
    gpus.insert(alert["placement"].value("gpu", ""));
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"3", "4"})) << alerts.dump(2);
  for (const auto& key : daemon.get("/api/v1/status")["keys"]) {
    EXPECT_TRUE(key["openAlert"].is_null()) << key.dump();
  }
  daemon.child().stop(20s);
}

// A runner that fails before it says which device it has (liger_bench.py's interpreter exits at
// once): each failed run is on the GPU the daemon started it on, never on GPU "unknown".
TEST(GpusE2E, ALigerRunnerFailingBeforeItNamesItsDeviceIsRecordedOnTheGpuTheDaemonProbed) {
  testing::TempDir scripts;
  testing::write_file(scripts / "fails.py", "import sys\nsys.exit(3)\n");
  FakeGpuHost host(json::array({{{"runner", "liger-bench"},
                                 {"python", "python3"},
                                 {"script", (scripts / "fails.py").string()},
                                 {"kernel", "tvd"},
                                 {"pass", "forward"},
                                 {"providers", {"liger"}},
                                 {"workloads", {"tokens16384-vocab65536-fp32"}},
                                 {"timeout", "60s"}}}));
  auto& daemon = host.daemon();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  std::set<std::string> gpus;
  for (const auto& run : daemon.runs()) {
    if (label(run, "runner") != "liger-bench") continue;
    EXPECT_NE(run["run"]["spec"]["status"], "passed") << run.dump();
    EXPECT_EQ(run["environment"]["spec"]["hardware"]["product"], "NVIDIA H100") << run.dump();
    EXPECT_EQ(label(run, "gpu_uuid"), uuid_of(std::stoi(label(run, "gpu_index"))));
    gpus.insert(label(run, "gpu_index"));
  }
  EXPECT_EQ(gpus.size(), static_cast<std::size_t>(kGpus)) << daemon.log();
  daemon.child().stop(20s);
}

TEST(GpusE2E, AllEightFakeGpusTwelvePercentSlowerAreTheUsualIncident) {
  FakeGpuHost host;
  baseline_then(host, json{{"all", 1.12}});
  const json alerts = host.daemon().get("/api/v1/alerts");
  ASSERT_EQ(alerts.size(), 1U) << alerts.dump(2) << host.daemon().log();
  EXPECT_EQ(alerts[0]["kind"], "environment") << alerts.dump(2);
  EXPECT_EQ(alerts[0]["members"].size(), static_cast<std::size_t>(kBenchmarks));
  for (const auto& member : alerts[0]["members"]) {
    EXPECT_NEAR(member["relativeChange"].get<double>(), 0.12, 0.01) << member.dump();
  }
  host.daemon().child().stop(20s);
}

// A webhook to the test's receiver.
json webhook(const std::string& url) {
  return json::array({{{"type", "webhook"},
                       {"name", "hook"},
                       {"url", url},
                       {"timeout", "500ms"},
                       {"backoff", {{"base", "50ms"}, {"cap", "200ms"}}}}});
}

// How many notices the receiver got about the alert `long_id`.
std::size_t notices_of(const notifiers::testing::TestReceiver& receiver,
                       const std::string& long_id) {
  std::size_t n = 0;
  for (const auto& request : receiver.snapshot().requests) {
    const json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) continue;
    for (const auto& alert : body.value("alerts", json::array())) {
      n += alert.value("id", "") == long_id ? 1 : 0;
    }
  }
  return n;
}

// Waits until the outbox has nothing pending (every notification queued was delivered).
bool outbox_settled(const testing::WatchingDaemon& daemon) {
  return testing::eventually([&] {
    const json status = daemon.get("/api/v1/status");
    if (!status.is_object()) return false;
    for (const auto& d : status.value("outbox", json::array())) {
      if (d.value("pending", 1) != 0) return false;
    }
    return true;
  });
}

// The open GPU alerts `GET /api/v1/status` lists.
json out_of_line(const testing::WatchingDaemon& daemon) {
  const json status = daemon.get("/api/v1/status");
  return status.is_object() ? status.value("outOfLine", json::array()) : json::array();
}

// A restart must never page twice: the replay at the start reads where each run ran, so it
// rebuilds the GPU alert open before it as the same alert, and a GPU still out of line after the
// restart is still that alert. Acknowledged through the API (token required), it stays
// acknowledged across a restart and resolves when the GPU is back in line.
TEST(GpusE2E, AGpuAlertOpenAtARestartIsTheSameAlertAfterItNotifiedOnceAndCanBeAcknowledged) {
  notifiers::testing::TestReceiver receiver;
  FakeGpuHost host(json::array(), webhook(receiver.url()));
  baseline_then(host, json{{uuid_of(3), 1.12}});
  auto& daemon = host.daemon();
  json alerts = daemon.get("/api/v1/alerts");
  ASSERT_EQ(alerts.size(), 1U) << alerts.dump(2) << daemon.log();
  const std::string id = alerts[0]["id"];
  const std::string long_id = alerts[0]["longId"];
  ASSERT_NE(long_id.find("gpu:"), std::string::npos) << long_id;
  ASSERT_TRUE(receiver.wait_for_requests(1)) << daemon.log();
  ASSERT_TRUE(outbox_settled(daemon));
  EXPECT_EQ(notices_of(receiver, long_id), 1U);

  // Restart on the same database; its cycle at start finds GPU 3 still slow, then one more.
  daemon.child().stop(20s);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  ASSERT_TRUE(daemon.run_cycle()) << daemon.log();
  alerts = daemon.get("/api/v1/alerts");
  ASSERT_EQ(alerts.size(), 1U) << alerts.dump(2) << daemon.log();
  EXPECT_EQ(alerts[0]["longId"], long_id);
  EXPECT_EQ(alerts[0]["state"], "firing");
  ASSERT_TRUE(outbox_settled(daemon));
  EXPECT_EQ(notices_of(receiver, long_id), 1U);
  EXPECT_EQ(receiver.snapshot().requests.size(), 1U);
  json units = out_of_line(daemon);
  ASSERT_EQ(units.size(), 1U) << units.dump(2);
  EXPECT_EQ(units[0]["id"], id);
  EXPECT_EQ(units[0]["gpuUuid"], uuid_of(3));
  EXPECT_EQ(units[0]["state"], "firing");

  // Acknowledged like any alert: the token is required, the state is stored and shown.
  const std::string ack = "/api/v1/alerts/" + id + "/ack";
  EXPECT_EQ(testing::http(daemon.port(), "POST", ack, "{}").status, 401);
  const auto acked =
      testing::http(daemon.port(), "POST", ack, "{}", testing::WatchingDaemon::kToken);
  ASSERT_EQ(acked.status, 200) << acked.body;
  EXPECT_EQ(json::parse(acked.body)["state"], "acknowledged") << acked.body;
  // Again: the same answer, as for a key's alert.
  EXPECT_EQ(testing::http(daemon.port(), "POST", ack, "{}", testing::WatchingDaemon::kToken).status,
            200);
  units = out_of_line(daemon);
  ASSERT_EQ(units.size(), 1U) << units.dump(2);
  EXPECT_EQ(units[0]["state"], "acknowledged");
  const auto overview = testing::http(daemon.port(), "GET", "/");
  ASSERT_EQ(overview.status, 200);
  EXPECT_NE(overview.body.find("data-gpu=\"" + uuid_of(3) + "\" data-state=\"acknowledged\""),
            std::string::npos)
      << overview.body.substr(0, 4000);
  const auto page = testing::http(daemon.port(), "GET", "/alerts/" + id);
  ASSERT_EQ(page.status, 200) << page.body.substr(0, 2000);
  EXPECT_NE(page.body.find("acknowledged"), std::string::npos);
  EXPECT_NE(page.body.find("GPU 3 (UUID " + uuid_of(3)), std::string::npos);

  // Still acknowledged after a restart and a cycle that finds the GPU still slow.
  daemon.child().stop(20s);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  alerts = daemon.get("/api/v1/alerts");
  ASSERT_EQ(alerts.size(), 1U) << alerts.dump(2) << daemon.log();
  EXPECT_EQ(alerts[0]["state"], "acknowledged");
  EXPECT_EQ(out_of_line(daemon).size(), 1U);

  // Back in line: it resolves; still the one alert and the one notification.
  host.set_speeds(json::object());
  ASSERT_TRUE(daemon.run_cycle()) << daemon.log();
  alerts = daemon.get("/api/v1/alerts");
  ASSERT_EQ(alerts.size(), 1U) << alerts.dump(2) << daemon.log();
  EXPECT_EQ(alerts[0]["state"], "resolved");
  EXPECT_TRUE(out_of_line(daemon).empty());
  ASSERT_TRUE(outbox_settled(daemon));
  EXPECT_EQ(notices_of(receiver, long_id), 1U);
  EXPECT_EQ(receiver.snapshot().requests.size(), 1U);
  daemon.child().stop(20s);
}

// History of several hosts, imported with their `host` labels (as a fleet's runs gathered in one
// place would be): 4 hosts run 6 benchmarks (workloads w0 to w5) each hour; in the last two hours
// host h100-c is 12% slower on the first `slow_keys` of them. Returns the database.
std::string import_fleet_history(const testing::TempDir& dir, int slow_keys) {
  const std::vector<std::string> hosts = {"h100-a", "h100-b", "h100-c", "h100-d"};
  constexpr int kHours = 12;
  constexpr int kKeys = 6;
  const core::Timestamp start = testing::day_before_now() - std::chrono::hours(kHours);
  std::string lines;
  for (int hour = 0; hour < kHours; ++hour) {
    for (int k = 0; k < kKeys; ++k) {
      for (std::size_t h = 0; h < hosts.size(); ++h) {
        testing::PostedRun run;
        run.observed =
            start + std::chrono::hours(hour) +
            std::chrono::seconds(k * static_cast<int>(hosts.size()) + static_cast<int>(h));
        run.workload = "w" + std::to_string(k);
        run.source = "fleet";
        // +-0.2% of noise around each key's level; host h100-c 12% slower in the last two hours.
        const double noise = 1.0 + 0.001 * ((hour * 7 + static_cast<int>(h) * 3 + k) % 5 - 2);
        const double slow =
            hosts[h] == "h100-c" && hour >= kHours - 2 && k < slow_keys ? 1.12 : 1.0;
        run.median_ns = static_cast<std::int64_t>(1'000'000.0 * (1 + 0.1 * k) * noise * slow);
        json record = testing::posted_record(run);
        record["run"]["metadata"]["name"] =
            record["run"]["metadata"]["name"].get<std::string>() + "-" + hosts[h];
        record["run"]["metadata"]["labels"]["host"] = hosts[h];
        lines += record.dump() + "\n";
      }
    }
  }
  testing::write_file(dir / "fleet.jsonl", lines);
  const std::string db = (dir / "fleet.db").string();
  const auto imported =
      testing::run_kernelwatch({"import", "--db", db, (dir / "fleet.jsonl").string()});
  EXPECT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  return db;
}

// `kernelwatch backtest` decides the host alert from the runs' labels, as the daemon does, and no
// key alert (the other hosts' runs of each key stay in band).
TEST(GpusE2E, BacktestOfImportedHistoryOfFourHostsListsOneHostAlertAndNoKeyAlert) {
  testing::TempDir dir;
  const std::string db = import_fleet_history(dir, 6);
  const auto backtest = testing::run_kernelwatch({"backtest", "--db", db, "--json"});
  ASSERT_EQ(backtest.exit_code, 0) << backtest.err;
  const json alerts = json::parse(backtest.out);
  ASSERT_EQ(alerts.size(), 1U) << alerts.dump(2);
  const json& alert = alerts[0];
  EXPECT_EQ(alert["kind"], "environment");
  EXPECT_EQ(alert["state"], "firing");
  EXPECT_NEAR(alert["relativeChange"].get<double>(), 0.12, 0.01) << alert.dump(2);
  const std::string explanation = alert.value("explanation", "");
  EXPECT_EQ(explanation.rfind("host h100-c is 1", 0), 0U) << explanation;
  EXPECT_NE(explanation.find("slower than its 3 sibling hosts on 6 of 6 benchmarks"),
            std::string::npos)
      << explanation;
  EXPECT_NE(alert["id"].get<std::string>().find("@host:h100-c@"), std::string::npos);

  // The table names it on its own line.
  const auto table = testing::run_kernelwatch({"backtest", "--db", db});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("environment  +1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("host h100-c is 1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("1 alert(s), 0 environment incident(s)"), std::string::npos)
      << table.out;
}

// The filters of `kernelwatch backtest` select a host alert (it has no key of its own) by the
// keys it was out of line on: host h100-c is slower on w0 to w3 only, so --workload w1 lists it
// and --workload w5 does not; a filter no key matches lists nothing. What is printed says it is a
// host alert and on which keys, the filter's first.
TEST(GpusE2E, BacktestFiltersListAHostAlertWhenOneOfItsKeysMatches) {
  testing::TempDir dir;
  const std::string db = import_fleet_history(dir, 4);
  const auto alerts_of = [&](std::vector<std::string> filter) {
    std::vector<std::string> args = {"backtest", "--db", db, "--json"};
    args.insert(args.end(), filter.begin(), filter.end());
    const auto backtest = testing::run_kernelwatch(args);
    EXPECT_EQ(backtest.exit_code, 0) << backtest.err;
    return json::parse(backtest.out);
  };
  const json all = alerts_of({});
  ASSERT_EQ(all.size(), 1U) << all.dump(2);
  EXPECT_EQ(all[0]["placement"]["host"], "h100-c") << all.dump(2);

  for (const auto& filter :
       std::vector<std::vector<std::string>>{{"--workload", "w1"},
                                             {"--benchmark", "synthetic/forward"},
                                             {"--provider", "posted"},
                                             {"--provider", "posted", "--workload", "w3",
                                              "--environment", "nvidia-h100-80gb-hbm3"}}) {
    const json selected = alerts_of(filter);
    ASSERT_EQ(selected.size(), 1U) << filter[1] << ": " << selected.dump(2);
    EXPECT_EQ(selected[0]["id"], all[0]["id"]);
    EXPECT_EQ(selected[0]["unit"], "host");
  }
  EXPECT_EQ(all[0]["unit"], "host");
  EXPECT_NE(all[0]["explanation"].get<std::string>().find("on 4 of 6 benchmarks"),
            std::string::npos)
      << all.dump(2);
  ASSERT_EQ(all[0]["keys"].size(), 4U) << all.dump(2);
  EXPECT_EQ(all[0]["keys"][0],
            json({{"benchmark", "synthetic/forward"}, {"provider", "posted"}, {"workload", "w0"}}));
  EXPECT_EQ(all[0]["keys"][3]["workload"], "w3");
  // The matching keys come first.
  EXPECT_EQ(alerts_of({"--workload", "w2"})[0]["keys"][0]["workload"], "w2");
  for (const auto& filter :
       std::vector<std::vector<std::string>>{{"--workload", "w5"},  // a key it was in line on
                                             {"--workload", "w9"},
                                             {"--benchmark", "synthetic/backward"},
                                             {"--provider", "torch"},
                                             {"--environment", "nvidia-a100-sxm4-80gb"}}) {
    EXPECT_TRUE(alerts_of(filter).empty()) << filter[1];
  }

  const auto table = testing::run_kernelwatch({"backtest", "--db", db, "--workload", "w3"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("host h100-c is 1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("; out of line on: synthetic/forward posted w3, synthetic/forward "
                           "posted w0, synthetic/forward posted w1 and 1 more"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("1 alert(s), 0 environment incident(s)"), std::string::npos)
      << table.out;
}

}  // namespace
}  // namespace kernelwatch
