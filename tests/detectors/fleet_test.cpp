// The fleet as controls (storage.fleet_controls, issue #39): a host's steps judged against the
// other hosts' runs of the same keys, the comparison alone and through the Watch. The hosts are
// FAKE: placements as the daemon labels runs, medians made up here.
#include "detectors/fleet.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "detectors/watch.hpp"
#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using core::Direction;
using namespace std::chrono_literals;

constexpr int kKeys = 6;
const std::vector<std::string> kOthers = {"host_a", "host_b", "host_c"};

core::Timestamp hour(int h) {
  return testing::week(0) + std::chrono::hours(h);
}

KeyLabels key(int k) {
  return KeyLabels{"fake/BM_K" + std::to_string(k), "fake",     "arg0",
                   "nvidia-h100-80gb-hbm3",         "protocol", "digest-" + std::to_string(k)};
}

Observation run_on(const std::string& host, int k, core::Timestamp at, double factor,
                   const std::string& implementation = "impl-1") {
  Observation run = testing::run_at(0, static_cast<std::int64_t>(1e6 * (k + 1) * factor));
  run.external_id = host + "-" + std::to_string(k) + "-" + core::format_timestamp(at);
  run.observed_at = at;
  run.implementation_digest = implementation;
  core::Placement placement;
  placement.host = host;
  run.placement = placement;
  return run;
}

// A Trigger of this host's run at hour `h` (onset and confirmation in one run, as a posted run).
Trigger step_at(int h, double factor, Direction direction = Direction::Regression) {
  Trigger trigger;
  trigger.direction = direction;
  trigger.run = run_on("host_d", 0, hour(h), factor);
  trigger.onset = trigger.run;
  return trigger;
}

// The other hosts' runs of key 0: hours 0..4, then at hour `h` times `factor(host)`.
std::vector<FleetRun> fleet_runs(int h, const std::function<double(const std::string&)>& factor,
                                 const std::string& implementation = "impl-1") {
  FleetRuns runs;
  for (const auto& host : kOthers) {
    for (int i = 0; i < 5; ++i) runs.keep("k", run_on(host, 0, hour(i) + 7s, 1.0));
    runs.add("k", run_on(host, 0, hour(h) - 30s, factor(host), implementation), hour(h));
  }
  return runs.for_step("k", hour(h));
}

TEST(FleetComparison, AHostThatMovedWhileTheOthersStayedMovedAlone) {
  const auto out = compare_with_fleet("host_d", step_at(8, 1.12),
                                      fleet_runs(8, [](const std::string&) { return 1.0; }),
                                      ControlParameters{});
  EXPECT_TRUE(out.compared);
  EXPECT_TRUE(out.alone);
  EXPECT_EQ(out.hosts, 3U);
  EXPECT_EQ(out.moved, 0U);
  EXPECT_NEAR(out.against_fleet, 0.12, 1e-9);
}

TEST(FleetComparison, AFleetThatMovedTooLeavesTheStepToTheUsualRules) {
  const auto out = compare_with_fleet("host_d", step_at(8, 1.12),
                                      fleet_runs(8, [](const std::string&) { return 1.12; }),
                                      ControlParameters{});
  EXPECT_TRUE(out.compared);
  EXPECT_FALSE(out.alone);
  EXPECT_EQ(out.moved, 3U);
  // One host of three moved with it: more than a quarter, not alone either.
  const auto one = compare_with_fleet(
      "host_d", step_at(8, 1.12),
      fleet_runs(8, [](const std::string& h) { return h == "host_a" ? 1.12 : 1.0; }),
      ControlParameters{});
  EXPECT_FALSE(one.alone);
  EXPECT_EQ(one.moved, 1U);
}

TEST(FleetComparison, HostsThatRanAnotherImplementationAreNoControls) {
  const auto out = compare_with_fleet("host_d", step_at(8, 1.12),
                                      fleet_runs(
                                          8, [](const std::string&) { return 1.0; }, "impl-2"),
                                      ControlParameters{});
  EXPECT_FALSE(out.compared);
  EXPECT_EQ(out.hosts, 0U);
}

TEST(FleetComparison, RunsOutsideTheWindowOrOfTheHostItselfAreNotCompared) {
  // The others' newest runs are more than cycle_gap before the step: nothing in the window.
  FleetRuns runs;
  for (const auto& host : kOthers) {
    for (int i = 0; i < 5; ++i) runs.keep("k", run_on(host, 0, hour(i), 1.0));
  }
  EXPECT_FALSE(compare_with_fleet("host_d", step_at(8, 1.12), runs.for_step("k", hour(8)),
                                  ControlParameters{})
                   .compared);
  // host_d's own runs are never its fleet.
  FleetRuns own;
  for (int i = 0; i < 5; ++i) own.keep("k", run_on("host_d", 0, hour(i), 1.0));
  own.add("k", run_on("host_d", 0, hour(8) - 30s, 1.0), hour(8));
  EXPECT_FALSE(compare_with_fleet("host_d", step_at(8, 1.12), own.for_step("k", hour(8)),
                                  ControlParameters{})
                   .compared);
}

TEST(FleetRunsKept, AHostsNewestRunsAreKeptWhateverTheOrderTheyCame) {
  FleetRuns forward, backward;
  for (int i = 0; i < 20; ++i) forward.keep("k", run_on("host_a", 0, hour(i), 1.0 + i * 0.01));
  for (int i = 19; i >= 0; --i) backward.keep("k", run_on("host_a", 0, hour(i), 1.0 + i * 0.01));
  const auto a = forward.for_step("k", hour(30));
  const auto b = backward.for_step("k", hour(30));
  ASSERT_EQ(a.size(), kFleetRunsKept);
  std::vector<core::Timestamp> at_a, at_b;
  for (const auto& r : a) at_a.push_back(r.at);
  for (const auto& r : b) at_b.push_back(r.at);
  std::sort(at_a.begin(), at_a.end());
  std::sort(at_b.begin(), at_b.end());
  EXPECT_EQ(at_a, at_b);
  EXPECT_EQ(at_a.front(), hour(20 - static_cast<int>(kFleetRunsKept)));
  // Runs read for another step are not this one's until the close that decides it settles them.
  forward.add("k", run_on("host_b", 0, hour(29), 1.0), hour(31));
  EXPECT_EQ(forward.for_step("k", hour(30)).size(), kFleetRunsKept);
  forward.settle();
  EXPECT_EQ(forward.for_step("k", hour(30)).size(), kFleetRunsKept + 1);
}

// host_d's keys, hourly (posted runs, judged alone); the other hosts ran every key at every hour
// too, and their runs around each held step are read as the daemon reads them.
std::vector<AlertEvent> feed_hour(Watch& watch, int h, const std::function<double(int)>& mine,
                                  const std::function<double(int)>& others) {
  std::vector<AlertEvent> events;
  for (int k = 0; k < kKeys; ++k) {
    auto step =
        watch.observe(key(k), run_on("host_d", k, hour(h) + 21s, mine(k)), ConfirmPolicy::None);
    events.insert(events.end(), step.events.begin(), step.events.end());
  }
  for (const auto& held : watch.held_steps()) {
    const int k = held.key->digest.back() - '0';
    for (const auto& host : kOthers) {
      for (int i = 0; i <= h; ++i) {
        watch.add_fleet_run(*held.key, run_on(host, k, hour(i), i == h ? others(k) : 1.0),
                            held.trigger->run.observed_at);
      }
    }
  }
  auto closed = watch.close_cycle();
  events.insert(events.end(), closed.begin(), closed.end());
  return events;
}

std::vector<Alert> fired_alerts(const std::vector<AlertEvent>& events) {
  std::vector<Alert> out;
  for (const auto& e : events) {
    if (e.fired && !core::is_incident_member(e.alert)) out.push_back(e.alert);
  }
  return out;
}

TEST(FleetWatch, AHostTwelvePercentSlowerAloneIsOneIncidentAboutTheHost) {
  Watch watch(DetectorParameters{});
  const auto same = [](int) { return 1.0; };
  for (int h = 0; h < 8; ++h) EXPECT_TRUE(fired_alerts(feed_hour(watch, h, same, same)).empty());
  const auto fired = fired_alerts(feed_hour(
      watch, 8, [](int) { return 1.12; }, same));
  ASSERT_EQ(fired.size(), 1U);
  EXPECT_EQ(fired[0].placement.host, "host_d");
  EXPECT_EQ(fired[0].members.size(), static_cast<std::size_t>(kKeys));
  EXPECT_NEAR(fired[0].relative_change, 0.12, 1e-9);
  EXPECT_NE(fired[0].explanation.find("host host_d's runs are +12.0% against those of 3 other "
                                      "host(s) of its fleet on 6 of 6 benchmarks"),
            std::string::npos)
      << fired[0].explanation;
  EXPECT_EQ(fired[0].id.long_form().find("nvidia-h100-80gb-hbm3@host:host_d@"), 0U);
}

TEST(FleetWatch, EveryHostSlowerIsTheUsualIncidentNotTheHosts) {
  Watch watch(DetectorParameters{});
  const auto same = [](int) { return 1.0; };
  const auto slower = [](int) { return 1.12; };
  for (int h = 0; h < 8; ++h) (void)feed_hour(watch, h, same, same);
  const auto fired = fired_alerts(feed_hour(watch, 8, slower, slower));
  ASSERT_EQ(fired.size(), 1U);
  EXPECT_TRUE(fired[0].placement.empty());
  EXPECT_EQ(fired[0].members.size(), static_cast<std::size_t>(kKeys));
}

TEST(FleetWatch, OneKeyOfSixAloneIsThatKeysOwnStep) {
  Watch watch(DetectorParameters{});
  const auto same = [](int) { return 1.0; };
  for (int h = 0; h < 8; ++h) (void)feed_hour(watch, h, same, same);
  const auto fired = fired_alerts(feed_hour(
      watch, 8, [](int k) { return k == 2 ? 1.12 : 1.0; }, same));
  ASSERT_EQ(fired.size(), 1U);
  EXPECT_EQ(fired[0].kind, core::AlertKind::Step);
  EXPECT_EQ(fired[0].key.digest, "digest-2");
}

TEST(FleetWatch, StepsDecidedInsideAnObserveNeverReadTheFleet) {
  // A key's next run closes its held step before the cycle's other runs come (close_steps
  // without the fleet): the fleet's runs read for the close that never came change nothing.
  Watch watch(DetectorParameters{});
  const auto same = [](int) { return 1.0; };
  for (int h = 0; h < 8; ++h) (void)feed_hour(watch, h, same, same);
  std::vector<AlertEvent> events;
  for (int k = 0; k < kKeys; ++k) {
    auto step = watch.observe(key(k), run_on("host_d", k, hour(8), 1.12), ConfirmPolicy::None);
    events.insert(events.end(), step.events.begin(), step.events.end());
  }
  for (const auto& held : watch.held_steps()) {
    for (const auto& host : kOthers) {
      watch.add_fleet_run(*held.key, run_on(host, 0, hour(8) - 30s, 1.0),
                          held.trigger->run.observed_at);
    }
  }
  auto again =
      watch.observe(key(0), run_on("host_d", 0, hour(8) + 1min, 1.12), ConfirmPolicy::None);
  events.insert(events.end(), again.events.begin(), again.events.end());
  const auto fired = fired_alerts(events);
  ASSERT_EQ(fired.size(), 1U);  // the six steps' incident of the cycle
  EXPECT_TRUE(fired[0].placement.empty());
  EXPECT_EQ(fired[0].members.size(), static_cast<std::size_t>(kKeys));
}

}  // namespace
}  // namespace kernelwatch::detectors
