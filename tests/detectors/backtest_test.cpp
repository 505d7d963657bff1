#include "detectors/backtest.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/run.hpp"
#include "detectors_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using testing::run_at;

KeyHistory stepped_history(const std::string& provider, const std::string& workload) {
  KeyHistory history;
  history.key = KeyLabels{"tvd/forward",
                          provider,
                          workload,
                          "nvidia-h100-80gb-hbm3",
                          "liger-bench-do-bench-forward",
                          ""};
  for (int i = 0; i < 8; ++i) {
    auto run = run_at(i, 1000000 + (i % 2) * 5000, 2000, 3000);
    run.implementation_version = "0.6.5";
    run.external_id = provider + "/" + workload + "/" + std::to_string(i);
    run.unnamed_hosts = true;  // Liger's weekly CI: whichever host it got
    history.runs.push_back(run);
  }
  for (int i = 8; i < 11; ++i) {
    auto run = run_at(i, 600000 + (i % 2) * 3000, 1000, 2000);
    run.implementation_version = "0.7.0";
    run.external_id = provider + "/" + workload + "/" + std::to_string(i);
    run.unnamed_hosts = true;
    history.runs.push_back(run);
  }
  return history;
}

TEST(Backtest, FindsAStepAtItsRunOrTheNext) {
  std::vector<KeyHistory> histories = {stepped_history("liger", "w")};
  BacktestOptions options;
  auto alerts = backtest(histories, options);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].fired.external_id, "liger/w/8");
  EXPECT_EQ(alerts[0].direction, Direction::Improvement);
  EXPECT_EQ(alerts[0].kind, AlertKind::Step);
  ASSERT_EQ(alerts[0].attribution.size(), 1u);
  EXPECT_EQ(alerts[0].attribution[0],
            (AttributionChange{"implementation.version", "0.6.5", "0.7.0"}));
  options.parameters.confirm = ConfirmPolicy::Next;
  alerts = backtest(histories, options);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].fired.external_id, "liger/w/9");
  EXPECT_EQ(alerts[0].onset.external_id, "liger/w/8");
}

TEST(Backtest, SortsEachHistoryByObservedAt) {
  auto history = stepped_history("liger", "w");
  std::mt19937 shuffle(3);
  std::shuffle(history.runs.begin(), history.runs.end(), shuffle);
  const auto alerts = backtest({history}, BacktestOptions{});
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].fired.external_id, "liger/w/8");
}

TEST(Backtest, FilterSelectsAlertsButControlsSeeEveryKey) {
  // The torch reference moved with liger: one environment incident with both keys, selected
  // when only liger's alerts are asked for.
  const std::vector<KeyHistory> histories = {stepped_history("liger", "w"),
                                             stepped_history("torch", "w")};
  BacktestOptions options;
  options.filter.provider = "liger";
  const auto alerts = backtest(histories, options);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].kind, AlertKind::Environment);
  EXPECT_FALSE(alerts[0].incident.empty());
  ASSERT_EQ(alerts[0].members.size(), 2u);
  EXPECT_EQ(alerts[0].members[0].key.provider, "liger");
  EXPECT_EQ(alerts[0].members[1].key.provider, "torch");
  EXPECT_NE(format_alert_table(alerts).find("1 environment incident(s)"), std::string::npos);
  options.filter.provider = "nobody";
  EXPECT_TRUE(backtest(histories, options).empty());
}

// A GPU or host alert has no key of its own: the filters select it by the keys it was out of
// line on, and its JSON and table line say which unit and keys.
TEST(Backtest, FilterSelectsAGpuAlertByTheKeysItWasOutOfLineOn) {
  Alert gpu;
  gpu.id = core::AlertId("nvidia-h100-80gb-hbm3@gpu:h100-a/GPU-3@2026-01-01T00:00:00Z");
  gpu.kind = AlertKind::Environment;
  gpu.key.environment = "nvidia-h100-80gb-hbm3";
  gpu.placement = core::Placement{"h100-a", "3", "GPU-3", "00000000:1C:00.0"};
  gpu.explanation = "GPU 3 (UUID GPU-3) of host h100-a is 12.0% slower than its 7 siblings";
  for (const char* workload : {"w1", "w2"}) {
    gpu.keys.push_back({"tvd/forward", "liger", workload, "nvidia-h100-80gb-hbm3", "p", ""});
  }
  const auto selects = [&](KeyFilter filter) { return filter.selects(gpu); };
  EXPECT_TRUE(selects({}));
  EXPECT_TRUE(selects({"tvd/forward", "", "", ""}));
  EXPECT_TRUE(selects({"", "liger", "w2", ""}));
  EXPECT_TRUE(selects({"", "", "", "nvidia-h100-80gb-hbm3"}));
  EXPECT_FALSE(selects({"", "", "w3", ""}));
  EXPECT_FALSE(selects({"", "torch", "", ""}));
  EXPECT_FALSE(selects({"tvd/backward", "", "w1", ""}));
  EXPECT_FALSE(selects({"", "", "", "nvidia-a100-sxm4-80gb"}));

  const auto doc = to_json({gpu})[0];
  EXPECT_EQ(doc["unit"], "gpu");
  EXPECT_EQ(
      doc["keys"],
      nlohmann::json::parse(R"([{"benchmark": "tvd/forward", "provider": "liger", "workload": "w1"},
                                      {"benchmark": "tvd/forward", "provider": "liger", "workload": "w2"}])"));
  const auto step = backtest({stepped_history("liger", "w")}, BacktestOptions{});
  ASSERT_EQ(step.size(), 1u);
  EXPECT_FALSE(to_json(step)[0].contains("unit"));
  EXPECT_FALSE(to_json(step)[0].contains("keys"));
  gpu.placement = core::Placement{"h100-a", "", "", ""};
  EXPECT_EQ(to_json({gpu})[0]["unit"], "host");
  EXPECT_NE(format_alert_line(gpu).find("siblings; out of line on: tvd/forward liger w1, "
                                        "tvd/forward liger w2  [firing]"),
            std::string::npos)
      << format_alert_line(gpu);
}

TEST(Backtest, JsonHasTheDocumentedFields) {
  const auto alerts = backtest({stepped_history("liger", "w")}, BacktestOptions{});
  ASSERT_EQ(alerts.size(), 1u);
  const auto json = to_json(alerts);
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 1u);
  const auto& a = json[0];
  for (const char* field :
       {"benchmark", "provider", "workload", "environment", "externalId", "observedAt", "direction",
        "kind", "relativeChange", "median", "band", "baselineRuns", "attribution"}) {
    EXPECT_TRUE(a.contains(field)) << field;
  }
  EXPECT_EQ(a["benchmark"], "tvd/forward");
  EXPECT_EQ(a["provider"], "liger");
  EXPECT_EQ(a["workload"], "w");
  EXPECT_EQ(a["environment"], "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(a["externalId"], "liger/w/8");
  EXPECT_EQ(a["observedAt"], core::format_timestamp(testing::week(8)));
  EXPECT_EQ(a["direction"], "improvement");
  EXPECT_EQ(a["kind"], "step");
  EXPECT_EQ(a["median"], 600000);
  // Baseline: 8 runs at 1000000/1005000 -> centre 1002500. A young key (8 judged runs, fewer
  // than 15) of Liger's CI (several hosts): the floor is max(2%, 50 us / centre) = 50000 ns:
  // [1000000 - 50000, 1005000 + 50000].
  EXPECT_EQ(a["band"]["lower"], 950000);
  EXPECT_EQ(a["band"]["upper"], 1055000);
  EXPECT_EQ(a["baselineRuns"], 8);
  EXPECT_NEAR(a["relativeChange"].get<double>(), 600000.0 / 1002500.0 - 1, 1e-12);
  ASSERT_EQ(a["attribution"].size(), 1u);
  EXPECT_EQ(a["attribution"][0]["field"], "implementation.version");
  EXPECT_EQ(a["attribution"][0]["from"], "0.6.5");
  EXPECT_EQ(a["attribution"][0]["to"], "0.7.0");
  EXPECT_TRUE(a["incident"].is_null());
}

TEST(Backtest, TableIsReadable) {
  const auto alerts = backtest({stepped_history("liger", "w")}, BacktestOptions{});
  const auto table = format_alert_table(alerts);
  EXPECT_NE(table.find("improvement  step  -40.1%  tvd/forward liger w nvidia-h100-80gb-hbm3"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("implementation version changed 0.6.5 -> 0.7.0"), std::string::npos);
  EXPECT_NE(table.find("1 alert(s), 0 environment incident(s)"), std::string::npos);
}

// A terminal line shows a digest by its first 12 hex digits; the JSON keeps it whole.
TEST(Backtest, TableLinesShortenDigestsTheJsonKeepsWhole) {
  const std::string from = "sha256:" + std::string(64, 'a');
  const std::string to = "sha256:0123456789ab" + std::string(52, 'c');
  auto alerts = backtest({stepped_history("liger", "w")}, BacktestOptions{});
  ASSERT_EQ(alerts.size(), 1u);
  alerts[0].attribution.push_back({"implementation.digest", from, to});
  const std::string line = format_alert_line(alerts[0]);
  EXPECT_NE(line.find("sha256:aaaaaaaaaaaa -> sha256:0123456789ab"), std::string::npos) << line;
  EXPECT_EQ(line.find(from), std::string::npos) << line;
  EXPECT_EQ(line.find(to), std::string::npos) << line;
  EXPECT_NE(line.find("0.6.5 -> 0.7.0"), std::string::npos) << line;  // other values stay
  const auto json = to_json(alerts);
  EXPECT_EQ(json[0]["attribution"][1]["from"], from);
  EXPECT_EQ(json[0]["attribution"][1]["to"], to);
}

TEST(Backtest, ParsesConfirmPolicy) {
  EXPECT_EQ(parse_confirm_policy("none").value(), ConfirmPolicy::None);
  EXPECT_EQ(parse_confirm_policy("next").value(), ConfirmPolicy::Next);
  const auto bad = parse_confirm_policy("twice");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, core::ErrorCode::InvalidArgument);
}

TEST(Observation, FromRecordTakesMedianQuantilesAndSoftware) {
  core::Record record;
  record.run.median = std::chrono::nanoseconds(577060);
  record.run.observed_at = testing::week(1);
  record.run.source_native.external_id = "layer_norm/backward/liger/env/w/2025-07-28-22-00-10";
  record.run.implementation_digest = "sha256:abc";
  record.run.measurements = {{"latency", "p20", "ns", 574390}, {"latency", "p80", "ns", 579850}};
  record.environment.software = {{"driver", "550.54"}, {"clocks", {{"sm", 1980}}}};
  const auto observation = observation_from_record(record, "0.6.1");
  EXPECT_EQ(observation.median.count(), 577060);
  ASSERT_TRUE(observation.p20 && observation.p80);
  EXPECT_EQ(observation.p20->count(), 574390);
  EXPECT_EQ(observation.p80->count(), 579850);
  EXPECT_EQ(observation.external_id, "layer_norm/backward/liger/env/w/2025-07-28-22-00-10");
  EXPECT_EQ(observation.implementation_version, "0.6.1");
  EXPECT_EQ(observation.software.at("driver"), "550.54");
  EXPECT_EQ(observation.software.at("clocks.sm"), "1980");
  EXPECT_TRUE(observation.judgeable());
}

// A run's key labels carry the digest the run was given at intake: the same as its key's own.
TEST(Observation, TheKeyLabelsOfARunAreThoseOfItsKey) {
  auto record = core::parse_record(nlohmann::json::parse(kernelwatch::testing::read_file(
      kernelwatch::testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json"))));
  ASSERT_TRUE(record) << record.error().message;
  const auto run = core::Run::of(*record);
  ASSERT_TRUE(run) << run.error().message;
  const KeyLabels of_run = key_labels(*run);
  const KeyLabels of_key = key_labels(core::key_of(*record).value());
  EXPECT_EQ(of_run.digest, of_key.digest);
  EXPECT_EQ(of_run.identity(), of_key.identity());
  EXPECT_EQ(of_run.benchmark, "tvd/backward");
  EXPECT_EQ(of_run.provider, "torch");
}

}  // namespace
}  // namespace kernelwatch::detectors
