#include "detectors/watch.hpp"

#include <gtest/gtest.h>

#include <set>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using namespace std::chrono_literals;
using testing::run_at;

// One workload on one host, measured by several providers: "liger" is a subject (its code is
// watched), "torch" a reference (ControlParameters::references).
KeyLabels key(const std::string& provider) {
  return KeyLabels{"b/forward", provider, "w", "nvidia-h100", "protocol", "digest-" + provider};
}

// Ten runs at `base` (+-0.5%), run 10 `fraction` above it: a step every detector sees, judged
// alone (ConfirmPolicy::None).
std::vector<AlertEvent> step_history(Watch& watch, const KeyLabels& labels, std::int64_t base,
                                     double fraction) {
  std::vector<AlertEvent> events;
  for (int i = 0; i < 10; ++i) {
    auto step = watch.observe(labels, run_at(i, base + (i % 2) * base / 200), ConfirmPolicy::None);
    events.insert(events.end(), step.events.begin(), step.events.end());
  }
  const auto stepped = static_cast<std::int64_t>(static_cast<double>(base) * (1 + fraction));
  auto step = watch.observe(labels, run_at(10, stepped), ConfirmPolicy::None);
  events.insert(events.end(), step.events.begin(), step.events.end());
  return events;
}

TEST(Watch, ASubjectAndItsReferenceSteppingTogetherAreOneIncidentNotTwoAlerts) {
  Watch watch(testing::without_jitter());
  for (const char* provider : {"liger", "torch"}) {
    for (const auto& e : step_history(watch, key(provider), 100000, 0.30))
      ADD_FAILURE() << "fired before the cycle closed: " << e.alert.id;
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
  ASSERT_EQ(incident.members.size(), 2u);
  std::set<std::string> providers;
  for (const auto& member : incident.members) {
    EXPECT_EQ(member.kind, AlertKind::Environment);
    EXPECT_EQ(member.incident, incident.id);
    EXPECT_NEAR(member.relative_change, 0.3, 0.01);
    providers.insert(member.key.provider);
  }
  EXPECT_EQ(providers, (std::set<std::string>{"liger", "torch"}));
  EXPECT_NEAR(incident.relative_change, 0.3, 0.01);
  // Not the keys' own alerts: nothing is open on them, and their return resolves nothing.
  for (const char* provider : {"liger", "torch"}) {
    EXPECT_FALSE(watch.find(key(provider).identity())->monitor->open_alert()) << provider;
  }
  EXPECT_TRUE(watch.observe(key("liger"), run_at(11, 100100), ConfirmPolicy::None).events.empty());
  EXPECT_TRUE(watch.close_cycle().empty());
}

TEST(Watch, ASubjectAloneIsItsOwnAlertAndAKeysNextRunClosesTheCycleFirst) {
  Watch watch(testing::without_jitter());
  EXPECT_TRUE(step_history(watch, key("liger"), 100000, 0.30).empty());
  for (int i = 0; i < 11; ++i) {
    (void)watch.observe(key("torch"), run_at(i, 200000 + (i % 2) * 1000), ConfirmPolicy::None);
  }
  // Its next run, back at the old level: the held step is decided first (its reference stayed:
  // the key's own), fires, and this run resolves it.
  const auto back = watch.observe(key("liger"), run_at(11, 100100), ConfirmPolicy::None);
  ASSERT_EQ(back.events.size(), 2u);
  EXPECT_TRUE(back.events[0].fired);
  EXPECT_EQ(back.events[0].alert.kind, AlertKind::Step);
  EXPECT_EQ(back.events[0].alert.key.provider, "liger");
  EXPECT_EQ(back.events[1].alert.state, AlertState::Resolved);
  EXPECT_TRUE(watch.close_cycle().empty());
  EXPECT_EQ(watch.keys().size(), 2u);
  EXPECT_EQ(watch.find(key("torch").identity())->last_run->external_id, "run-10");
}

}  // namespace
}  // namespace kernelwatch::detectors
