#include "detectors/watch.hpp"

#include <gtest/gtest.h>

#include <set>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using namespace std::chrono_literals;
using testing::run_at;
using testing::week;

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

// The incident events of a close (not the members' own events, which the engine never stores).
std::vector<AlertEvent> incidents_of(const std::vector<AlertEvent>& events) {
  std::vector<AlertEvent> out;
  for (const auto& e : events) {
    if (core::is_incident(e.alert)) out.push_back(e);
  }
  return out;
}

TEST(Watch, ASubjectAndItsReferenceSteppingTogetherAreOneIncidentNotTwoAlerts) {
  Watch watch(testing::without_jitter());
  for (const char* provider : {"liger", "torch"}) {
    for (const auto& e : step_history(watch, key(provider), 100000, 0.30))
      ADD_FAILURE() << "fired before the cycle closed: " << e.alert.id.long_form();
  }
  EXPECT_TRUE(watch.holds_triggers());
  const auto closed = watch.close_cycle();
  // Each member fires on its key (never stored or notified by itself), then the incident.
  for (const auto& e : closed) {
    if (!core::is_incident(e.alert)) {
      EXPECT_TRUE(core::is_incident_member(e.alert)) << e.alert.id.long_form();
    }
  }
  const auto incidents = incidents_of(closed);
  ASSERT_EQ(incidents.size(), 1u);
  const Alert& incident = incidents[0].alert;
  EXPECT_TRUE(incidents[0].fired);
  EXPECT_EQ(incidents[0].cause, "controls");
  EXPECT_EQ(incident.kind, AlertKind::Environment);
  EXPECT_EQ(incident.state, AlertState::Firing);
  EXPECT_EQ(incident.direction, Direction::Regression);
  EXPECT_EQ(incident.key.environment, "nvidia-h100");
  EXPECT_TRUE(incident.key.benchmark.empty());
  EXPECT_EQ(incident.id, incident.incident);
  ASSERT_EQ(incident.members.size(), 2u);
  std::set<std::string> providers;
  for (const auto& member : incident.members) {
    EXPECT_EQ(member.kind, AlertKind::Step);
    EXPECT_EQ(member.incident, incident.id);
    EXPECT_NEAR(member.relative_change, 0.3, 0.01);
    providers.insert(member.key.provider);
  }
  EXPECT_EQ(providers, (std::set<std::string>{"liger", "torch"}));
  EXPECT_NEAR(incident.relative_change, 0.3, 0.01);
  EXPECT_NE(incident.explanation.find("2 key(s) of nvidia-h100 stepped in one cycle (2 slower, 0 "
                                      "faster; median +"),
            std::string::npos)
      << incident.explanation;
  EXPECT_NE(incident.explanation.find("1 reference(s) stepped with the subjects"),
            std::string::npos)
      << incident.explanation;
  // Each member is its key's open alert: the key knows it breached.
  for (const char* provider : {"liger", "torch"}) {
    const auto& open = watch.find(key(provider).identity())->monitor->open_alert();
    ASSERT_TRUE(open) << provider;
    EXPECT_EQ(open->incident, incident.id);
  }
  // One member back at its level resolves itself; the incident fires while the other does.
  const auto back = watch.observe(key("liger"), run_at(11, 100100), ConfirmPolicy::None);
  const auto moved = incidents_of(back.events);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_FALSE(moved[0].fired);
  EXPECT_EQ(moved[0].alert.state, AlertState::Firing);
  EXPECT_EQ(watch.incident(incident.id)->state, AlertState::Firing);
  // The other back too: the incident resolves with its last member.
  const auto both = watch.observe(key("torch"), run_at(11, 100100), ConfirmPolicy::None);
  ASSERT_EQ(incidents_of(both.events).size(), 1u);
  EXPECT_EQ(incidents_of(both.events)[0].alert.state, AlertState::Resolved);
  EXPECT_TRUE(watch.close_cycle().empty());
}

TEST(Watch, AcknowledgingAnIncidentAcknowledgesItsMembersAndRebaseliningClosesThem) {
  Watch watch(testing::without_jitter());
  for (const char* provider : {"liger", "torch"})
    (void)step_history(watch, key(provider), 100000, 0.30);
  const auto incidents = incidents_of(watch.close_cycle());
  ASSERT_EQ(incidents.size(), 1u);
  const core::AlertId id = incidents[0].alert.id;

  const auto acked = watch.act_on_incident(id, OperatorAction::Acknowledge, week(12));
  ASSERT_EQ(incidents_of(acked).size(), 1u);
  EXPECT_EQ(incidents_of(acked)[0].alert.state, AlertState::Acknowledged);
  for (const char* provider : {"liger", "torch"}) {
    EXPECT_EQ(watch.find(key(provider).identity())->monitor->open_alert()->state,
              AlertState::Acknowledged)
        << provider;
  }
  EXPECT_TRUE(watch.act_on_incident(id, OperatorAction::Acknowledge, week(12)).empty());

  const auto rebaselined = watch.act_on_incident(id, OperatorAction::Rebaseline, week(13));
  ASSERT_EQ(incidents_of(rebaselined).size(), 1u);
  EXPECT_EQ(incidents_of(rebaselined)[0].alert.state, AlertState::Rebaselined);
  for (const char* provider : {"liger", "torch"}) {
    EXPECT_FALSE(watch.find(key(provider).identity())->monitor->open_alert()) << provider;
  }
  EXPECT_TRUE(
      watch.act_on_incident(core::AlertId("nowhere@2025"), OperatorAction::Acknowledge, week(13))
          .empty());
}

// Only subjects stepped: the incident never calls it an environment change, and it names what
// the runs say changed at that run.
TEST(Watch, AnIncidentOfSubjectsOnlyNamesWhatChangedAndNeverBlamesTheHost) {
  Watch watch(testing::without_jitter());
  for (int k = 0; k < 5; ++k) {
    const KeyLabels labels{"b/forward",   "liger", "w" + std::to_string(k),
                           "nvidia-h100", "p",     "digest-" + std::to_string(k)};
    for (int i = 0; i < 10; ++i) {
      (void)watch.observe(labels, run_at(i, 100000 + (i % 2) * 500), ConfirmPolicy::None);
    }
    auto stepped = run_at(10, 150000);
    stepped.implementation_version = "1.1.0";
    stepped.software["triton"] = "3.5.0";
    (void)watch.observe(labels, stepped, ConfirmPolicy::None);
  }
  const auto incidents = incidents_of(watch.close_cycle());
  ASSERT_EQ(incidents.size(), 1u);
  const auto& text = incidents[0].alert.explanation;
  EXPECT_NE(text.find("Only subjects stepped"), std::string::npos) << text;
  EXPECT_EQ(text.find("environment change"), std::string::npos) << text;
  EXPECT_NE(text.find("implementation version changed 1.0.0 -> 1.1.0 (in 5 of 5 keys)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("software triton changed (unrecorded) -> 3.5.0 (in 5 of 5 keys)"),
            std::string::npos)
      << text;
  ASSERT_FALSE(incidents[0].alert.attribution.empty());
  EXPECT_EQ(incidents[0].alert.attribution[0].field, "implementation.version");
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

// storage.warm_start: a key new to the watch starts from runs judged elsewhere (the fleet's seeds)
// exactly as observing them would leave it, when they are quiet; when they moved, or their newest
// run awaits confirmation, the key is not adopted and the watch is unchanged.
TEST(Watch, SeedsThatAreQuietStartAKeyAsObservingThemWouldAndOthersAreRefused) {
  const auto quiet =
      testing::runs_of({100000, 100400, 99700, 100200, 99900, 100300, 99800, 100100});
  Watch seeded(testing::without_jitter());
  ASSERT_EQ(seeded.seed(key("liger"), quiet, ConfirmPolicy::Next), std::nullopt);
  Watch observed(testing::without_jitter());
  for (const auto& run : quiet) {
    ASSERT_TRUE(observed.observe(key("liger"), run, ConfirmPolicy::Next).events.empty());
  }
  ASSERT_NE(seeded.find(key("liger").identity()), nullptr);
  EXPECT_EQ(seeded.find(key("liger").identity())->last_run->external_id, "run-7");
  // This host's first run, 12% slower (its own runs are judged alone): the same verdict.
  const Observation first = run_at(8, 112000);
  const auto a = seeded.observe(key("liger"), first, ConfirmPolicy::None);
  const auto b = observed.observe(key("liger"), first, ConfirmPolicy::None);
  EXPECT_EQ(a.detection.verdict.kind, VerdictKind::Regression) << a.detection.verdict.explanation;
  EXPECT_EQ(a.detection.verdict.explanation, b.detection.verdict.explanation);
  EXPECT_EQ(seeded.seed(key("liger"), quiet, ConfirmPolicy::Next), "the key is already watched");

  // A step in the seeds (confirmed by the next seed): refused, nothing adopted.
  auto stepped = quiet;
  stepped.push_back(run_at(8, 130000));
  stepped.push_back(run_at(9, 130500));
  Watch refused(testing::without_jitter());
  const auto moved = refused.seed(key("torch"), stepped, ConfirmPolicy::Next);
  ASSERT_TRUE(moved.has_value());
  EXPECT_NE(moved->find("its runs moved"), std::string::npos) << *moved;
  EXPECT_EQ(refused.find(key("torch").identity()), nullptr);
  EXPECT_FALSE(refused.holds_triggers());
  // The newest seed breached and nothing confirmed it yet: refused too.
  stepped.pop_back();
  const auto pending = refused.seed(key("torch"), stepped, ConfirmPolicy::Next);
  ASSERT_TRUE(pending.has_value());
  EXPECT_NE(pending->find("awaits confirmation"), std::string::npos) << *pending;
  EXPECT_EQ(refused.find(key("torch").identity()), nullptr);
  EXPECT_TRUE(refused.keys().empty());
}

}  // namespace
}  // namespace kernelwatch::detectors
