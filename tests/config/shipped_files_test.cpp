// The files kernelwatch ships and loads: the example configs as shipped, config files on disk
// (not found, relative paths, permissions), and the systemd unit.
#include "config/config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/duration.hpp"
#include "runners/liger_bench_config.hpp"
#include "tests/config/config_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::config {
namespace {

namespace fs = std::filesystem;
using core::Pass;
using core::Provider;
using std::chrono::milliseconds;
using json = nlohmann::json;

using namespace kernelwatch::config::test;

TEST(LoadConfig, ShippedCpuExampleLoadsWithATokenFromTheEnvironment) {
  const auto config = load_config(source_file("kernelwatch.example.json"),
                                  Environment::from_map({{"KERNELWATCH_TOKEN", kToken}}));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->storage.path, "/var/lib/kernelwatch/kernelwatch.db");
  EXPECT_EQ(config->http.host, "127.0.0.1");
  EXPECT_EQ(config->http.port, 9477);
  EXPECT_EQ(config->http.token, kToken);
  EXPECT_EQ(config->http.token_source.origin, SecretOrigin::Environment);
  EXPECT_EQ(config->http.token_source.name, "KERNELWATCH_TOKEN");
  EXPECT_EQ(config->backend, std::nullopt);
  EXPECT_EQ(config->schedule.interval, std::chrono::minutes(15));
  EXPECT_EQ(config->schedule.jitter, std::chrono::minutes(1));
  EXPECT_EQ(config->schedule.at_start, AtStart::Run);
  ASSERT_EQ(config->benchmarks.size(), 2U);
  EXPECT_EQ(own_kernels(config->benchmarks[0]).kernel.name(), "layer_norm");
  EXPECT_EQ(own_kernels(config->benchmarks[0]).pass, Pass::Backward);
  EXPECT_EQ(own_kernels(config->benchmarks[0]).providers,
            (std::vector<Provider>{Provider::Fused, Provider::Reference}));
  ASSERT_EQ(own_kernels(config->benchmarks[0]).workloads.size(), 1U);
  EXPECT_EQ(own_kernels(config->benchmarks[0]).workloads[0].label(), "hidden2048-rows2048-fp32");
  EXPECT_EQ(own_kernels(config->benchmarks[1]).kernel.name(), "tvd");
  EXPECT_EQ(own_kernels(config->benchmarks[1]).pass, Pass::Forward);
  EXPECT_EQ(own_kernels(config->benchmarks[1]).workloads.at(0).label(), "tokens1024-vocab4096-fp32");
  EXPECT_TRUE(config->notifiers.empty());
  EXPECT_TRUE(config->warnings.empty());
}

TEST(LoadConfig, ShippedCpuExampleStartsWithoutAToken) {
  const auto config =
      load_config(source_file("kernelwatch.example.json"), Environment::from_map({}));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->http.token, "");
  ASSERT_EQ(config->warnings.size(), 1U);
  EXPECT_EQ(config->warnings[0],
            "http.token_env: environment variable KERNELWATCH_TOKEN is not set; the mutating "
            "endpoints are disabled");
}

TEST(LoadConfig, ShippedGpuExampleListsTheFoundingWorkloads) {
  const auto config = load_config(source_file("kernelwatch.gpu.example.json"),
                                  Environment::from_map({{"KERNELWATCH_TOKEN", kToken}}));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->backend, kernels::Backend::Cuda);
  ASSERT_EQ(config->benchmarks.size(), 2U);
  EXPECT_EQ(own_kernels(config->benchmarks[0]).workloads.at(0).label(), "hidden16384-rows4096-fp32");
  EXPECT_EQ(own_kernels(config->benchmarks[1]).workloads.at(0).label(), "tokens16384-vocab65536-fp32");
}

TEST(LoadConfig, MissingFileIsNotFound) {
  const auto config = load_config("/nonexistent/kernelwatch.json", Environment::from_map({}));
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code, core::ErrorCode::NotFound);
  EXPECT_EQ(config.error().message,
            "cannot read config file \"/nonexistent/kernelwatch.json\": No such file or directory");
}

TEST(LoadConfig, ResolvesRelativePathsAgainstTheConfigDirectory) {
  testing::TempDir dir;
  write_private(dir / "token", kToken + "\n");
  write_private(dir / "hook", kWebhookUrl + "\n");
  write_private(dir / "key", kSigningKey);
  testing::write_file(dir / "ca.pem", "not checked here\n");
  testing::write_file(dir / "kernelwatch.json", R"({
    "storage": {"path": "state/kw.db"},
    "http": {"token_file": "token"},
    "notifiers": [{"type": "webhook", "name": "ops", "url_file": "hook", "secret_file": "key",
                   "ca_file": "ca.pem"}]
  })");
  const auto config = load_config(dir / "kernelwatch.json", Environment::from_map({}));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->storage.path, dir / "state/kw.db");
  EXPECT_EQ(config->http.token, kToken);
  EXPECT_EQ(config->http.token_source.name, (dir / "token").string());
  ASSERT_EQ(config->notifiers.size(), 1U);
  EXPECT_EQ(config->notifiers[0].destination.name, "ops");
  EXPECT_EQ(config->notifiers[0].destination.url, kWebhookUrl);
  EXPECT_EQ(config->notifiers[0].url_source.origin, SecretOrigin::File);
  EXPECT_EQ(config->notifiers[0].destination.secret, kSigningKey);
  EXPECT_EQ(config->notifiers[0].secret_source.name, (dir / "key").string());
  EXPECT_EQ(config->notifiers[0].destination.ca_file, (dir / "ca.pem").string());
}

TEST(LoadConfig, WarnsAboutAnInlineUrlInAWorldReadableFile) {
  testing::TempDir dir;
  testing::write_file(dir / "kernelwatch.json",
                      R"({"notifiers": [{"type": "slack", "url": ")" + kSlackUrl + R"("}]})");
  fs::permissions(dir / "kernelwatch.json", fs::perms::others_read, fs::perm_options::add);
  const auto config = load_config(dir / "kernelwatch.json", Environment::from_map({}));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->warnings.size(), 1U);
  EXPECT_EQ(config->warnings[0], "notifiers[0].url is written in " +
                                     (dir / "kernelwatch.json").string() +
                                     ", which is readable by others; prefer url_file or url_env");
}

// The HTTP server's slowloris defences: how long a request header may take to arrive, and how
// many connections one client address may hold.

std::vector<std::string> directives(const fs::path& unit) {
  std::ifstream in(unit);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

bool has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

TEST(SystemdUnit, IsANotifyServiceThatStillReachesTheGpu) {
  const auto lines = directives(source_file("kernelwatch.service"));
  ASSERT_FALSE(lines.empty());
  for (const char* expected :
       {"Type=notify", "WatchdogSec=60", "Restart=on-failure", "StateDirectory=kernelwatch",
        "ExecStart=/usr/local/bin/kernelwatch daemon --config /etc/kernelwatch/kernelwatch.json",
        "ExecReload=/bin/kill -HUP $MAINPID", "DevicePolicy=closed", "DeviceAllow=char-nvidia* rw",
        "SupplementaryGroups=video", "NoNewPrivileges=yes", "ProtectSystem=strict",
        "EnvironmentFile=-/etc/kernelwatch/env"}) {
    EXPECT_TRUE(has(lines, expected)) << expected;
  }
  for (const auto& line : lines) {
    EXPECT_NE(line.rfind("ProcSubset=", 0), 0U) << line;
    EXPECT_NE(line.rfind("PrivateDevices=", 0), 0U) << line;
    EXPECT_NE(line.rfind("MemoryDenyWriteExecute=", 0), 0U) << line;
  }
}

// --- liger-bench entries ------------------------------------------------------------------

TEST(LoadConfig, ShippedH100LigerExampleRunsBothSeedProvidersAndOwnKernels) {
  const auto config = load_config(source_file("kernelwatch.h100-liger.example.json"),
                                  Environment::from_map({{"KERNELWATCH_TOKEN", kToken}}));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->benchmarks.size(), 4U);
  EXPECT_EQ(config->benchmarks[0].runner(), "");
  EXPECT_EQ(config->benchmarks[3].runner(), "liger-bench");
  ASSERT_NE(config->benchmarks[3].source_as<runners::LigerBenchSource>(), nullptr);
  const auto& tvd = *config->benchmarks[3].source_as<runners::LigerBenchSource>();
  EXPECT_EQ(tvd.kernel.name(), "tvd");
  EXPECT_EQ(tvd.pass, Pass::Backward);
  EXPECT_EQ(tvd.providers,
            (std::vector{runners::LigerProvider::Torch, runners::LigerProvider::Liger}));
  EXPECT_EQ(tvd.options.python, "/opt/venvs/liger/bin/python3");
  EXPECT_EQ(tvd.options.timeout, std::chrono::minutes(10));
  EXPECT_EQ(tvd.workloads.at(0).label(), "tokens16384-vocab65536-fp32");
  EXPECT_EQ(config->benchmarks[2].source_as<runners::LigerBenchSource>()->providers,
            (std::vector{runners::LigerProvider::Liger, runners::LigerProvider::Huggingface}));
  const json redacted = redacted_json(*config);
  EXPECT_EQ(redacted["benchmarks"][3]["runner"], "liger-bench");
  EXPECT_EQ(redacted["benchmarks"][3]["providers"], json({"torch", "liger"}));
}

}  // namespace
}  // namespace kernelwatch::config
