#include "detectors/watch.hpp"

#include <gtest/gtest.h>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using namespace std::chrono_literals;
using testing::run_at;

KeyLabels key(const std::string& workload) {
  return KeyLabels{"b/forward",   "posted",   workload,
                   "nvidia-h100", "protocol", "digest-" + workload};
}

// Ten runs at 100 us (+-0.5%), run 10 at 130 us: a step every detector sees, judged alone.
std::vector<AlertEvent> step_history(Watch& watch, const KeyLabels& labels) {
  std::vector<AlertEvent> events;
  for (int i = 0; i < 10; ++i) {
    auto step = watch.observe(labels, run_at(i, 100000 + (i % 2) * 500), ConfirmPolicy::None);
    events.insert(events.end(), step.events.begin(), step.events.end());
  }
  auto step = watch.observe(labels, run_at(10, 130000), ConfirmPolicy::None);
  events.insert(events.end(), step.events.begin(), step.events.end());
  return events;
}

TEST(Watch, MostKeysSteppingInOneCycleAreOneEnvironmentIncidentNotThreeAlerts) {
  Watch watch(DetectorParameters{});
  for (const char* w : {"a", "b", "c"}) {
    for (const auto& e : step_history(watch, key(w)))
      ADD_FAILURE() << "fired early: " << e.alert.id;
  }
  EXPECT_TRUE(watch.holds_triggers());
  const auto closed = watch.close_cycle();
  ASSERT_EQ(closed.size(), 1u);
  const Alert& incident = closed[0].alert;
  EXPECT_TRUE(closed[0].fired);
  EXPECT_EQ(closed[0].cause, "controls");
  EXPECT_EQ(incident.kind, AlertKind::Environment);
  EXPECT_EQ(incident.state, AlertState::Rebaselined);
  EXPECT_EQ(incident.direction, Direction::Regression);
  EXPECT_EQ(incident.key.environment, "nvidia-h100");
  EXPECT_TRUE(incident.key.benchmark.empty());
  EXPECT_EQ(incident.id, incident.incident);
  ASSERT_EQ(incident.members.size(), 3u);
  for (const auto& member : incident.members) {
    EXPECT_EQ(member.kind, AlertKind::Environment);
    EXPECT_EQ(member.incident, incident.id);
    EXPECT_NEAR(member.relative_change, 0.3, 0.01);
  }
  EXPECT_EQ(incident.members[0].key.workload, "a");
  EXPECT_NEAR(incident.relative_change, 0.3, 0.01);
  // Not the keys' own alerts: nothing is open on them, and their return resolves nothing.
  for (const char* w : {"a", "b", "c"}) {
    EXPECT_FALSE(watch.find(key(w).identity())->monitor->open_alert()) << w;
  }
  EXPECT_TRUE(watch.observe(key("a"), run_at(11, 100100), ConfirmPolicy::None).events.empty());
  EXPECT_TRUE(watch.close_cycle().empty());
}

TEST(Watch, TwoKeysOfThreeAreTheirOwnAlertsAndAKeysNextRunClosesTheCycleFirst) {
  Watch watch(DetectorParameters{});
  EXPECT_TRUE(step_history(watch, key("a")).empty());
  EXPECT_TRUE(step_history(watch, key("b")).empty());
  for (int i = 0; i < 11; ++i) {
    (void)watch.observe(key("c"), run_at(i, 100000 + (i % 2) * 500), ConfirmPolicy::None);
  }
  // Key a's next run, back at the old level: its held step is judged first (2 of 3 keys: below
  // environment_min_keys), fires, and this run resolves it.
  const auto back = watch.observe(key("a"), run_at(11, 100100), ConfirmPolicy::None);
  ASSERT_EQ(back.events.size(), 3u);
  EXPECT_TRUE(back.events[0].fired);
  EXPECT_EQ(back.events[0].alert.key.workload, "a");
  EXPECT_EQ(back.events[0].alert.kind, AlertKind::Step);
  EXPECT_TRUE(back.events[1].fired);
  EXPECT_EQ(back.events[1].alert.key.workload, "b");
  EXPECT_EQ(back.events[2].alert.key.workload, "a");
  EXPECT_EQ(back.events[2].alert.state, AlertState::Resolved);
  EXPECT_TRUE(watch.close_cycle().empty());
  EXPECT_EQ(watch.find(key("b").identity())->monitor->open_alert()->kind, AlertKind::Step);
  EXPECT_EQ(watch.keys().size(), 3u);
  EXPECT_EQ(watch.find(key("c").identity())->last_run->external_id, "run-10");
}

}  // namespace
}  // namespace kernelwatch::detectors
