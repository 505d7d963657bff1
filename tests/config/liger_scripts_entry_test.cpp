// `"runner": "liger-scripts"` entries in the config file: the runner's own reader
// (runners/liger_scripts_config.hpp) through the config loader, its messages with the field's
// path, the confirmation the config must choose, and the logged config.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "runners/liger_scripts_config.hpp"

namespace kernelwatch::config {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Result<Config> parse(const std::string& text) {
  return parse_config(text, "kernelwatch.json", Environment::from_map({}), "/etc/kernelwatch");
}

std::string error_of(const std::string& entry) {
  const auto config = parse(R"({"benchmarks": [)" + entry + "]}");
  return config ? "(no error)" : config.error().message;
}

TEST(LigerScriptsEntry, ReadsEveryField) {
  const auto config = parse(R"({"benchmarks": [
      {"runner": "liger-scripts", "name": "liger-rms", "checkout": "/opt/Liger-Kernel",
       "python": "venv/bin/python3", "scripts": ["benchmark/scripts/benchmark_rms_norm.py"],
       "args": ["--sweep-mode", "model_config"], "timeout": "30m", "interval": "1h",
       "env": {"CUDA_VISIBLE_DEVICES": "0", "HF_TOKEN": "secret"}, "confirm": "rerun"},
      {"runner": "liger-scripts", "name": "liger-all", "checkout": "liger",
       "python": "python3", "scripts": "all", "interval": "24h", "confirm": "next"}]})");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->benchmarks.size(), 2U);
  EXPECT_EQ(config->benchmarks[0].runner(), "liger-scripts");
  EXPECT_EQ(config->benchmarks[0].interval, std::chrono::hours(1));
  ASSERT_NE(config->benchmarks[0].source_as<runners::LigerScriptsSource>(), nullptr);
  const runners::LigerScriptsEntry& e =
      config->benchmarks[0].source_as<runners::LigerScriptsSource>()->entry;
  EXPECT_EQ(e.name, "liger-rms");
  EXPECT_EQ(e.checkout, "/opt/Liger-Kernel");
  EXPECT_EQ(e.python, "/etc/kernelwatch/venv/bin/python3");
  EXPECT_EQ(e.scripts, std::vector<std::string>{"benchmark/scripts/benchmark_rms_norm.py"});
  EXPECT_EQ(e.args.size(), 2U);
  EXPECT_EQ(e.timeout, std::chrono::minutes(30));
  EXPECT_EQ(e.confirm, runners::ConfirmMode::Rerun);
  const runners::LigerScriptsEntry& all =
      config->benchmarks[1].source_as<runners::LigerScriptsSource>()->entry;
  EXPECT_TRUE(all.all());
  EXPECT_EQ(all.checkout, "/etc/kernelwatch/liger");
  EXPECT_EQ(all.python, "python3");  // a bare name is looked up in PATH when it runs
  EXPECT_EQ(all.timeout, std::chrono::hours(1));
  EXPECT_EQ(all.confirm, runners::ConfirmMode::Next);
  const json redacted = redacted_json(*config);
  EXPECT_EQ(redacted["benchmarks"][0]["env"],
            json({{"CUDA_VISIBLE_DEVICES", "0"}, {"HF_TOKEN", "<redacted>"}}));
  EXPECT_EQ(redacted["benchmarks"][0]["timeout"], "30m");
  EXPECT_EQ(redacted["benchmarks"][1]["scripts"], "all");
  EXPECT_EQ(redacted["benchmarks"][1]["runner"], "liger-scripts");
}

TEST(LigerScriptsEntry, ErrorsNameTheFieldAndTheConfirmationMustBeChosen) {
  const std::string ok =
      R"("runner": "liger-scripts", "name": "l", "checkout": "/opt/l", "python": "python3")";
  EXPECT_EQ(error_of("{" + ok + R"(, "confirm": "next"})"),
            "kernelwatch.json: benchmarks[0]: scripts is missing (\"all\", or a list like "
            "[\"benchmark/scripts/benchmark_rms_norm.py\"])");
  EXPECT_EQ(error_of("{" + ok + R"(, "scripts": "all"})"),
            "kernelwatch.json: benchmarks[0]: confirm is missing (\"rerun\": the whole entry runs "
            "again at once; \"next\": its next scheduled run confirms)");
  EXPECT_EQ(error_of("{" + ok + R"(, "scripts": ["../../etc/passwd.py"], "confirm": "next"})"),
            "kernelwatch.json: benchmarks[0].scripts[0]: \"../../etc/passwd.py\" is not a script "
            "of the checkout's benchmark/scripts/ folder (like "
            "\"benchmark/scripts/benchmark_rms_norm.py\")");
  EXPECT_EQ(
      error_of("{" + ok + R"(, "scripts": ["benchmark/scripts/a/../b.py"], "confirm": "next"})"),
      "kernelwatch.json: benchmarks[0].scripts[0]: \"benchmark/scripts/a/../b.py\" is not a "
      "script of the checkout's benchmark/scripts/ folder (like "
      "\"benchmark/scripts/benchmark_rms_norm.py\")");
  EXPECT_EQ(error_of("{" + ok + R"(, "scripts": "some", "confirm": "next"})"),
            "kernelwatch.json: benchmarks[0].scripts: is \"all\" or a list of scripts");
  EXPECT_EQ(error_of("{" + ok + R"(, "scripts": "all", "format": "liger-csv", "confirm": "next"})"),
            "kernelwatch.json: benchmarks[0].format: does not apply to a \"liger-scripts\" entry "
            "(Liger's scripts name their kernels, workloads and providers in the rows they write)");
  EXPECT_EQ(error_of(R"({"runner": "liger-scripts", "name": "l", "python": "p", "scripts": "all",
                        "confirm": "next"})"),
            "kernelwatch.json: benchmarks[0]: checkout is missing (the Liger-Kernel checkout "
            "whose benchmark/scripts run, like \"/opt/Liger-Kernel\")");
  EXPECT_EQ(
      error_of("{" + ok + R"(, "scripts": "all", "confirm": "twice"})"),
      "kernelwatch.json: benchmarks[0].confirm: \"twice\" is not one of (\"rerun\": the whole "
      "entry runs again at once; \"next\": its next scheduled run confirms)");
  // One name per entry, across runners.
  EXPECT_EQ(error_of("{" + ok + R"(, "scripts": "all", "confirm": "next"},
                     {"runner": "command", "name": "l", "command": ["x"], "format": "liger-csv"})"),
            "kernelwatch.json: benchmarks[1].name: \"l\" is already the name of benchmarks[0]");
}

}  // namespace
}  // namespace kernelwatch::config
