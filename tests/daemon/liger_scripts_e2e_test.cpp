// A `"runner": "liger-scripts"` entry through the real binary (issue #24 item 2): the repository's
// Liger CSV history is imported, then the daemon runs the entry and its run joins the imported key
// of that kernel; `kernelwatch discover` shows the same key with its history. The checkout is a
// FAKE Liger-Kernel checkout (tests/runners/fake_liger), standing in for Liger because Liger's
// scripts need a GPU, PyTorch and Triton; its rows claim the H100 of the published history, which
// this GPU-less host cannot refute (the daemon finds no GPU through NVML), and it is left byte for
// byte as it was.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/daemon/support/watching_daemon.hpp"
#include "tests/support/fake_liger.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kKey =
    "benchmark=layer_norm/forward&provider=liger&workload=hidden1024-rows4096-fp32&"
    "environment=nvidia-h100-80gb-hbm3";

// The stored run count of the key layer_norm/forward liger hidden1024-rows4096-fp32 on the H100.
std::int64_t history_runs(const json& keys) {
  for (const auto& k : keys) {
    if (k["benchmark"] == "layer_norm/forward" && k["provider"] == "liger" &&
        k["workload"] == "hidden1024-rows4096-fp32" &&
        k["environment"] == "nvidia-h100-80gb-hbm3") {
      return k["runs"].get<std::int64_t>();
    }
  }
  return -1;
}

TEST(LigerScriptsE2E, ARerunOfLigersOwnScriptJoinsTheKeyOfItsImportedHistory) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/python3"));
  testing::TempDir dir;
  const auto checkout = testing::copy_fake_liger(dir / "Liger-Kernel");
  const auto before = testing::snapshot(checkout);
  const auto db = dir / "kw.db";
  const auto imported = testing::run_kernelwatch(
      {"import", "--db", db.string(), testing::liger_csv("weekly_ci.tvd_layer_norm.csv").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto keys = testing::run_kernelwatch({"keys", "--db", db.string(), "--json"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  const std::int64_t history = history_runs(json::parse(keys.out));
  ASSERT_GT(history, 20) << keys.out.substr(0, 2000);

  testing::WatchingDaemon daemon(
      dir.path(), json::array({{{"runner", "liger-scripts"},
                                {"name", "liger"},
                                {"checkout", checkout.string()},
                                {"python", "/usr/bin/python3"},
                                {"scripts", {"benchmark/scripts/benchmark_layer_norm.py"}},
                                {"confirm", "next"},
                                {"timeout", "2m"}}}));
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_TRUE(daemon.wait_for_cycles(1)) << daemon.log();
  const json newest = daemon.get(std::string("/api/v1/runs?limit=1&") + kKey);
  ASSERT_EQ(newest.size(), 1U) << daemon.log();
  const json& run = newest[0]["run"];
  EXPECT_EQ(run["spec"]["sourceNative"]["source"], "kernelwatch-liger-scripts") << run.dump(2);
  EXPECT_EQ(run["spec"]["status"], "passed") << run.dump(2);
  EXPECT_EQ(run["spec"]["timing"]["latencyNs"]["median"], 20'000);
  EXPECT_EQ(run["metadata"]["labels"]["entry"], "liger");
  // The new run joined the imported key: one run more, and no second key beside it.
  EXPECT_EQ(history_runs(daemon.get("/api/v1/keys")), history + 1);
  const json status = daemon.get("/api/v1/status");
  ASSERT_EQ(status["entries"].size(), 1U) << status.dump(2);
  EXPECT_EQ(status["entries"][0]["runner"], "liger-scripts") << status["entries"].dump(2);
  daemon.child().stop(20s);

  // discover runs it once more, stores nothing, and shows the history of the same key.
  const auto discovered =
      testing::run_kernelwatch({"discover", "--config", (dir / "kernelwatch.json").string()});
  EXPECT_EQ(discovered.exit_code, 0) << discovered.err;
  EXPECT_NE(discovered.out.find(std::to_string(history + 1) + " run(s) since 2025-"),
            std::string::npos)
      << discovered.out;
  // Liger's scripts have no listing: --list says the entry must run.
  const auto listed = testing::run_kernelwatch(
      {"discover", "--config", (dir / "kernelwatch.json").string(), "--list"});
  EXPECT_EQ(listed.exit_code, 1);
  EXPECT_NE(listed.err.find("liger: a liger-scripts entry cannot list its cases without running "
                            "them: run discover without --list to see its keys"),
            std::string::npos)
      << listed.err;
  EXPECT_EQ(testing::snapshot(checkout), before);
}

}  // namespace
}  // namespace kernelwatch
