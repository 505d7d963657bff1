// `"runner": "command"` entries in the config file: the runner's own reader
// (runners/command_config.hpp) through the config loader, its messages with the field's path, the
// per-entry interval, and the logged config that shows no value of a variable that may be secret.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "runners/command_config.hpp"

namespace kernelwatch::config {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kBaseDir = "/etc/kernelwatch";

Result<Config> parse(const std::string& text) {
  return parse_config(text, "kernelwatch.json", Environment::from_map({}), kBaseDir);
}

std::string error_of(const std::string& entry) {
  const auto config = parse(R"({"benchmarks": [)" + entry + "]}");
  return config ? "(no error)" : config.error().message;
}

TEST(CommandEntry, ReadsEveryField) {
  const auto config = parse(R"({"schedule": {"interval": "15m"}, "benchmarks": [
      {"runner": "command", "name": "my-gemm",
       "command": ["./bench_gemm", "--benchmark_format=json", "--benchmark_repetitions=10"],
       "format": "gbench-json", "output": "stdout", "timeout": "20m", "interval": "1h",
       "env": {"FOO": "1", "CUDA_VISIBLE_DEVICES": "0"}, "provider": "cutlass",
       "confirm": "next", "working_directory": "/tmp"},
      {"runner": "command", "name": "nightly", "command": ["nv", "--json", "{out}"],
       "format": "nvbench-json", "output": "{out}"},
      {"kernel": "tvd", "pass": "forward", "workloads": ["tokens1024-vocab4096-fp32"],
       "interval": "5m"}]})");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->benchmarks.size(), 3U);
  const auto& b = config->benchmarks[0];
  EXPECT_EQ(b.runner(), "command");
  EXPECT_EQ(b.interval, std::chrono::hours(1));
  ASSERT_NE(b.source_as<runners::CommandSource>(), nullptr);
  const runners::CommandEntry& e = b.source_as<runners::CommandSource>()->entry;
  EXPECT_EQ(e.name, "my-gemm");
  EXPECT_EQ(e.command.size(), 3U);
  EXPECT_EQ(e.format, runners::OutputFormat::GbenchJson);
  EXPECT_EQ(e.timeout, std::chrono::minutes(20));
  EXPECT_EQ(e.provider, "cutlass");
  EXPECT_EQ(e.confirm, runners::ConfirmMode::Next);
  EXPECT_EQ(e.env.size(), 2U);
  EXPECT_EQ(e.working_directory, "/tmp");
  EXPECT_EQ(config->benchmarks[1].source_as<runners::CommandSource>()->entry.output, "{out}");
  EXPECT_EQ(config->benchmarks[1].source_as<runners::CommandSource>()->entry.timeout,
            std::chrono::minutes(10));
  EXPECT_FALSE(config->benchmarks[1].interval);
  EXPECT_EQ(config->benchmarks[2].interval, std::chrono::minutes(5));
  const json redacted = redacted_json(*config);
  EXPECT_EQ(redacted["benchmarks"][0]["env"],
            json({{"CUDA_VISIBLE_DEVICES", "0"}, {"FOO", "<redacted>"}}));
  EXPECT_EQ(redacted["benchmarks"][0]["timeout"], "20m");
  EXPECT_EQ(redacted["benchmarks"][0]["interval"], "1h");
  EXPECT_EQ(redacted["benchmarks"][2]["interval"], "5m");
}

TEST(CommandEntry, ErrorsNameTheField) {
  const std::string ok = R"("runner": "command", "name": "b", "command": ["./b"])";
  EXPECT_EQ(error_of("{" + ok + "}"),
            "kernelwatch.json: benchmarks[0]: format is missing (one of kernelindex-jsonl, "
            "gbench-json, nvbench-json, pytest-benchmark-json, liger-csv)");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "csv"})"),
            "kernelwatch.json: benchmarks[0].format: unknown output format \"csv\" (known: "
            "kernelindex-jsonl, gbench-json, nvbench-json, pytest-benchmark-json, liger-csv)");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json", "output": "/tmp/x.json"})"),
            "kernelwatch.json: benchmarks[0].output: \"/tmp/x.json\" is neither \"stdout\" nor a "
            "path containing {out}");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json", "output": "{out}"})"),
            "kernelwatch.json: benchmarks[0].output: names {out}, but no element of command has "
            "{out}: the program cannot know where to write");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json", "kernel": "tvd"})"),
            "kernelwatch.json: benchmarks[0].kernel: does not apply to a \"command\" entry (its "
            "output names its benchmarks and workloads)");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json", "shell": true})"),
            "kernelwatch.json: benchmarks[0].shell: unknown field");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json", "env": {"A-B": "1"}})"),
            "kernelwatch.json: benchmarks[0].env.A-B: is not an environment variable name "
            "([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json", "timeout": "10ms"})"),
            "kernelwatch.json: benchmarks[0].timeout: 10ms is shorter than 1s");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json", "confirm": "never"})"),
            "kernelwatch.json: benchmarks[0].confirm: \"never\" is not \"rerun\" (run the entry "
            "again at once) or \"next\" (its next scheduled run confirms)");
  EXPECT_EQ(error_of(R"({"runner": "command", "name": "Big Name", "command": ["x"],
                        "format": "gbench-json"})"),
            "kernelwatch.json: benchmarks[0].name: \"Big Name\" is not 1 to 64 of a-z, 0-9, '.', "
            "'_', '-' starting with a letter or digit");
  EXPECT_EQ(error_of(R"({"runner": "command", "name": "b", "command": [],
                        "format": "gbench-json"})"),
            "kernelwatch.json: benchmarks[0].command: needs a program as its first element");
  EXPECT_EQ(error_of("{" + ok + R"(, "format": "gbench-json"}, {)" + ok +
                     R"(, "format": "nvbench-json"})"),
            "kernelwatch.json: benchmarks[1].name: \"b\" is already the name of benchmarks[0]");
}

}  // namespace
}  // namespace kernelwatch::config
