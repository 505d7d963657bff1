// The seam a run source plugs into (runners/source_entry.hpp, runners/sources.hpp): a source that
// only this test knows, registered in the test's own catalogue, is read by the config loader,
// logged by redacted_json, named and scheduled, planned per GPU by cycle_plan and listed by
// nothing else; no line of config/ or daemon/ names it. The daemon's own catalogue is untouched.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "daemon/schedule.hpp"
#include "runners/harness_config.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::daemon {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A producer that runs nothing; its name says where it was made.
class NamedProducer final : public runners::RunProducer {
 public:
  explicit NamedProducer(std::string name) : name_(std::move(name)) {}
  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] core::Result<runners::Produced> run(
      const std::function<core::Timestamp()>& now) override {
    (void)now;
    return runners::Produced{};
  }

 private:
  std::string name_;
};

// `"runner": "echo"`: a name, a secret-ish `token` the log must not show, a timeout and `gpus`.
class EchoSource final : public runners::SourceEntry {
 public:
  [[nodiscard]] std::string_view runner() const override { return "echo"; }
  [[nodiscard]] std::string name() const override { return entry_name; }
  [[nodiscard]] json to_json(const runners::DurationText& duration) const override {
    return {{"runner", "echo"},
            {"name", entry_name},
            {"token", "<redacted>"},
            {"timeout", duration(timeout)},
            {"gpus", runners::gpu_selection_json(gpus)}};
  }
  [[nodiscard]] std::vector<std::shared_ptr<runners::RunProducer>> producers(
      runners::CycleHost& host) const override {
    auto selected = host.select(gpus, {});
    if (!selected) {
      return {std::make_shared<runners::FailingProducer>(name(), selected.error().message)};
    }
    return {host.per_gpu(entry_name, *selected,
                         [&](const runners::GpuDevice* gpu,
                             runners::HostIdentity) -> std::shared_ptr<runners::RunProducer> {
                           return std::make_shared<NamedProducer>(
                               entry_name +
                               (gpu == nullptr ? "" : "@" + std::to_string(gpu->index)));
                         })};
  }

  std::string entry_name;
  std::string token;
  std::chrono::milliseconds timeout{30s};
  runners::GpuSelection gpus;
};

core::Result<std::shared_ptr<const runners::SourceEntry>> read_echo(
    const core::JsonField& object, const runners::EntryReaderServices& services) {
  auto out = std::make_shared<EchoSource>();
  out->gpus = KW_TRY(runners::read_gpu_selection(object["gpus"]));
  KW_TRY(services.known_fields(object, {"runner", "name", "token", "timeout", "interval", "gpus"}));
  out->entry_name = KW_TRY(object["name"].string());
  out->token = KW_TRY(object["token"].string_or(""));
  if (object["timeout"].present()) {
    out->timeout = KW_TRY(services.duration(object["timeout"], 1s));
  }
  return std::shared_ptr<const runners::SourceEntry>(std::move(out));
}

constexpr runners::RunSource kEchoSource{
    .source = "test-echo", .runner = "echo", .gpus = true, .read = read_echo};
constexpr runners::RunSource kTestSources[] = {runners::kHarnessRunSource, kEchoSource};

core::Result<config::Config> parse(const std::string& text) {
  return config::parse_config(text, "kernelwatch.json", config::Environment::from_map({}), "/",
                              runners::SourceCatalogue(kTestSources));
}

std::string error_of(const std::string& text) {
  const auto config = parse(text);
  return config ? "(no error)" : config.error().message;
}

TEST(SourceSeam, ASourceRegisteredInACatalogueIsReadLoggedNamedAndPlannedPerGpu) {
  const auto config = parse(R"({"benchmarks": [
      {"runner": "echo", "name": "hello", "token": "s3cret", "timeout": "2m", "interval": "1h",
       "gpus": [0, 1]},
      {"kernel": "tvd", "pass": "forward", "workloads": ["tokens1024-vocab4096-fp32"]}]})");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->benchmarks.size(), 2U);
  const config::BenchmarkConfig& echo = config->benchmarks[0];
  EXPECT_EQ(echo.runner(), "echo");
  EXPECT_EQ(echo.name(), "hello");
  ASSERT_NE(echo.source_as<EchoSource>(), nullptr);
  EXPECT_EQ(echo.source_as<EchoSource>()->token, "s3cret");
  EXPECT_EQ(echo.interval, 1h);

  // Logged as the source writes itself, with the config's durations and interval; the secret
  // never.
  const json logged = config::redacted_json(*config)["benchmarks"][0];
  EXPECT_EQ(logged, json({{"runner", "echo"},
                          {"name", "hello"},
                          {"token", "<redacted>"},
                          {"timeout", "2m"},
                          {"interval", "1h"},
                          {"gpus", {0, 1}}}));
  EXPECT_EQ(config::redacted_json(*config).dump().find("s3cret"), std::string::npos);

  // Scheduled under its name and runner; planned on each selected GPU at once.
  EntrySchedule schedule;
  schedule.sync(*config, core::Timestamp{}, config::AtStart::Run);
  ASSERT_EQ(schedule.entries().size(), 2U);
  EXPECT_EQ(schedule.entries()[0].name, "hello");
  EXPECT_EQ(schedule.entries()[0].runner, "echo");
  EXPECT_EQ(schedule.entries()[1].runner, "harness");
  RunnerServices services;
  services.inventory = [] {
    std::vector<runners::GpuDevice> gpus(3);
    for (unsigned i = 0; i < gpus.size(); ++i) gpus[i].index = i;
    return gpus;
  };
  const Plan plan = cycle_plan(*config, kernels::Backend::Cpu, services, {"hello"});
  ASSERT_EQ(plan.size(), 1U);
  EXPECT_EQ(plan[0].entry, "hello");
  EXPECT_EQ(plan[0].producer->name(), "hello");  // one PerGpuProducer over GPUs 0 and 1
  EXPECT_NE(dynamic_cast<runners::PerGpuProducer*>(plan[0].producer.get()), nullptr);

  // A GPU the host lacks: the entry's one producer fails this cycle and says why.
  const auto missing = parse(R"({"benchmarks": [{"runner": "echo", "name": "x", "gpus": [7]}]})");
  ASSERT_TRUE(missing) << missing.error().message;
  const Plan failing = cycle_plan(*missing, kernels::Backend::Cpu, services, {"x"});
  ASSERT_EQ(failing.size(), 1U);
  EXPECT_NE(dynamic_cast<runners::FailingProducer*>(failing[0].producer.get()), nullptr);

  // Its logged form reads back as the same entry.
  json again = config::redacted_json(*config);
  again["benchmarks"][0]["token"] = "t";
  const auto reread = parse(again.dump());
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(config::redacted_json(*reread)["benchmarks"],
            config::redacted_json(*config)["benchmarks"]);
}

TEST(SourceSeam, TheCatalogueNamesTheKnownRunnersAndNamesAreUniqueAcrossSources) {
  EXPECT_EQ(error_of(R"({"benchmarks": [{"runner": "command", "name": "c"}]})"),
            "kernelwatch.json: benchmarks[0].runner: \"command\" is not a known runner (known: "
            "echo; leave it out for kernelwatch's own kernels)");
  // kernelwatch's own kernels take `gpus` whatever the catalogue holds.
  EXPECT_EQ(error_of(R"({"benchmarks": [{"kernel": "tvd", "pass": "forward", "gpus": "some",
                         "workloads": ["tokens1024-vocab4096-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].gpus: \"some\" is not \"all\" (every GPU of the "
            "host) or a list of GPU indices or UUIDs ([0, 1] or [\"GPU-8c3a...\"])");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"runner": "echo", "name": "a"},
                                        {"runner": "echo", "name": "a"}]})"),
            "kernelwatch.json: benchmarks[1].name: \"a\" is already the name of benchmarks[0]");
  EXPECT_EQ(error_of(R"({"benchmarks": [{"runner": "echo", "name": "a", "python": "p"}]})"),
            "kernelwatch.json: benchmarks[0].python: unknown field");
  // An empty runner is no runner, not kernelwatch's own kernels.
  EXPECT_EQ(error_of(R"({"benchmarks": [{"runner": "", "kernel": "tvd", "pass": "forward",
                         "workloads": ["tokens1024-vocab4096-fp32"]}]})"),
            "kernelwatch.json: benchmarks[0].runner: \"\" is not a known runner (known: echo; "
            "leave it out for kernelwatch's own kernels)");
  // kernelwatch's own kernels are a source of the catalogue like the others: a catalogue
  // without them reads no entry without `runner`.
  constexpr runners::RunSource kEchoOnly[] = {kEchoSource};
  const auto without_own = config::parse_config(
      R"({"benchmarks": [{"kernel": "tvd", "pass": "forward",
                          "workloads": ["tokens1024-vocab4096-fp32"]}]})",
      "kernelwatch.json", config::Environment::from_map({}), "/",
      runners::SourceCatalogue(kEchoOnly));
  ASSERT_FALSE(without_own);
  EXPECT_EQ(without_own.error().message,
            "kernelwatch.json: benchmarks[0]: runner is missing (known: echo)");
  // The daemon's catalogue knows its own sources, not this one.
  EXPECT_EQ(runners::source_catalogue().find_runner("echo"), nullptr);
  EXPECT_EQ(runners::join_names(runners::source_catalogue().runners(), ", "),
            "liger-bench, liger-scripts, command");
}

}  // namespace
}  // namespace kernelwatch::daemon
