#include "detectors/controls.hpp"

#include <gtest/gtest.h>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using namespace std::chrono_literals;
using testing::week;

KeyLabels key(const std::string& benchmark, const std::string& provider,
              const std::string& workload, const std::string& environment = "nvidia-h100") {
  return KeyLabels{benchmark, provider, workload, environment, "protocol", ""};
}

Alert step_alert(const KeyLabels& labels, core::Timestamp at, Direction direction) {
  Alert alert;
  alert.id = labels.display();
  alert.key = labels;
  alert.direction = direction;
  alert.fired.observed_at = at;
  alert.onset.observed_at = at;
  return alert;
}

KeyVerdicts verdicts(const KeyLabels& labels, std::vector<VerdictKind> kinds,
                     std::chrono::minutes offset = 0min) {
  KeyVerdicts out{labels, {}};
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    out.runs.push_back({week(static_cast<int>(i)) + offset, kinds[i]});
  }
  return out;
}

constexpr auto In = VerdictKind::InBand;
constexpr auto Up = VerdictKind::Regression;
constexpr auto Down = VerdictKind::Improvement;

TEST(Controls, ReferenceProviderMovingTheSameWayMakesItAnEnvironmentAlert) {
  const auto liger = key("tvd/forward", "liger", "tokens16384-vocab4096-fp32");
  const auto torch = key("tvd/forward", "torch", "tokens16384-vocab4096-fp32");
  const auto other = key("tvd/forward", "liger", "tokens16384-vocab8192-fp32");
  std::vector<Alert> alerts = {step_alert(liger, week(3) + 5min, Direction::Regression),
                               step_alert(torch, week(3) + 9min, Direction::Regression),
                               step_alert(other, week(3) + 5min, Direction::Regression)};
  const std::vector<KeyVerdicts> all = {verdicts(liger, {In, In, In, Up}, 5min),
                                        verdicts(torch, {In, In, In, Up}, 9min),
                                        verdicts(other, {In, In, In, Up}, 5min),
                                        verdicts(key("a", "liger", "w1"), {In, In, In, In}),
                                        verdicts(key("b", "liger", "w2"), {In, In, In, In}),
                                        verdicts(key("c", "liger", "w3"), {In, In, In, In}),
                                        verdicts(key("d", "liger", "w4"), {In, In, In, In}),
                                        verdicts(key("e", "liger", "w5"), {In, In, In, In}),
                                        verdicts(key("f", "liger", "w6"), {In, In, In, In})};
  // 3 of 9 keys moved: not most of the environment, so only the reference rule applies.
  apply_controls(alerts, all, ControlParameters{});
  EXPECT_EQ(alerts[0].kind, AlertKind::Environment);
  EXPECT_EQ(alerts[1].kind, AlertKind::Environment);  // the reference joins the incident
  EXPECT_EQ(alerts[0].incident, alerts[1].incident);
  EXPECT_EQ(alerts[0].incident, "nvidia-h100@" + core::format_timestamp(week(3)) + "/regression");
  EXPECT_EQ(alerts[2].kind, AlertKind::Step);  // its own reference (vocab8192) did not move
  EXPECT_TRUE(alerts[2].incident.empty());
}

TEST(Controls, AReferenceMovingTheOtherWayOrInAnotherCycleIsNoControl) {
  const auto liger = key("tvd/forward", "liger", "w");
  const auto torch = key("tvd/forward", "torch", "w");
  std::vector<Alert> alerts = {step_alert(liger, week(3), Direction::Regression)};
  apply_controls(alerts,
                 std::vector<KeyVerdicts>{verdicts(liger, {In, In, In, Up}),
                                          verdicts(torch, {In, In, In, Down})},
                 ControlParameters{});
  EXPECT_EQ(alerts[0].kind, AlertKind::Step);
  alerts = {step_alert(liger, week(3), Direction::Regression)};
  apply_controls(alerts,
                 std::vector<KeyVerdicts>{verdicts(liger, {In, In, In, Up}),
                                          verdicts(torch, {In, In, Up, In})},
                 ControlParameters{});
  EXPECT_EQ(alerts[0].kind, AlertKind::Step);
}

TEST(Controls, MostKeysOfAnEnvironmentBreachingTogetherIsOneIncident) {
  std::vector<Alert> alerts;
  std::vector<KeyVerdicts> all;
  for (int i = 0; i < 5; ++i) {
    const auto k = key("layer_norm/forward", "liger", "w" + std::to_string(i));
    all.push_back(verdicts(k, {In, In, Up}, std::chrono::minutes(i)));
    if (i < 4)
      alerts.push_back(step_alert(k, week(2) + std::chrono::minutes(i), Direction::Regression));
  }
  all.push_back(verdicts(key("x", "liger", "quiet1"), {In, In, In}));
  all.push_back(verdicts(key("y", "liger", "quiet2"), {In, In, In}));
  // Another environment in the same week is untouched.
  const auto elsewhere = key("layer_norm/forward", "liger", "w0", "nvidia-h200");
  all.push_back(verdicts(elsewhere, {In, In, Up}));
  alerts.push_back(step_alert(elsewhere, week(2), Direction::Regression));
  apply_controls(alerts, all, ControlParameters{});  // 5 of 7 keys moved up
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(alerts[i].kind, AlertKind::Environment);
    EXPECT_EQ(alerts[i].incident, alerts[0].incident);
  }
  EXPECT_EQ(alerts[4].kind, AlertKind::Step);
}

TEST(Controls, AFewKeysBreachingAreNotMostOfTheEnvironment) {
  std::vector<Alert> alerts;
  std::vector<KeyVerdicts> all;
  for (int i = 0; i < 10; ++i) {
    const auto k = key("layer_norm/forward", "liger", "w" + std::to_string(i));
    const bool moved = i < 3;
    all.push_back(verdicts(k, {In, In, moved ? Up : In}));
    if (moved) alerts.push_back(step_alert(k, week(2), Direction::Regression));
  }
  apply_controls(alerts, all, ControlParameters{});
  for (const auto& alert : alerts) EXPECT_EQ(alert.kind, AlertKind::Step);
}

TEST(Controls, DriftAlertsStayDrift) {
  const auto liger = key("tvd/forward", "liger", "w");
  const auto torch = key("tvd/forward", "torch", "w");
  auto drift = step_alert(liger, week(3), Direction::Regression);
  drift.kind = AlertKind::Drift;
  std::vector<Alert> alerts = {drift};
  apply_controls(alerts,
                 std::vector<KeyVerdicts>{verdicts(liger, {In, In, In, In}),
                                          verdicts(torch, {In, In, In, Up})},
                 ControlParameters{});
  EXPECT_EQ(alerts[0].kind, AlertKind::Drift);
}

}  // namespace
}  // namespace kernelwatch::detectors
