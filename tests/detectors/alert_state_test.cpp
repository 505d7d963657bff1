#include "detectors/alert_state.hpp"

#include <gtest/gtest.h>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using namespace std::chrono_literals;
using testing::run_at;
using testing::week;

Alert alert_on(const std::string& id, std::int64_t lower, std::int64_t upper) {
  Alert alert;
  alert.id = core::AlertId(id);
  alert.band.lower = std::chrono::nanoseconds(lower);
  alert.band.upper = std::chrono::nanoseconds(upper);
  alert.fired.external_id = "run-8";
  alert.onset = alert.fired;
  return alert;
}

TEST(AlertStateMachine, FiringNotifiesOnce) {
  AlertStateMachine machine;
  const auto events = machine.fire(alert_on("a", 98000, 102000), week(8));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].alert.state, AlertState::Firing);
  EXPECT_TRUE(events[0].fired);
  ASSERT_TRUE(machine.open());
  EXPECT_EQ(machine.open()->state, AlertState::Firing);
}

TEST(AlertStateMachine, FiringToAcknowledgedIsSilentAndStopsRepeats) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  const auto ack = machine.acknowledge(core::AlertId("a"), week(8) + 1h);
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].from, AlertState::Firing);
  EXPECT_EQ(ack[0].alert.state, AlertState::Acknowledged);
  EXPECT_FALSE(ack[0].fired);
  EXPECT_TRUE(machine.acknowledge(core::AlertId("a"), week(8) + 2h).empty());  // idempotent
  EXPECT_TRUE(machine.acknowledge(core::AlertId("other"), week(8) + 2h).empty());
  EXPECT_EQ(reminder_due(machine.open()->state, week(8), AlertPolicy{24h}), std::nullopt);
}

TEST(ReminderDue, RepeatIntervalAfterTheLastNotificationWhileFiring) {
  const AlertPolicy policy{24h};
  EXPECT_EQ(reminder_due(AlertState::Firing, week(8), policy), week(8) + 24h);
  EXPECT_EQ(reminder_due(AlertState::Firing, week(8) + 24h, policy), week(8) + 48h);
  // Never notified (owed, not yet queued): nothing to remind of yet.
  EXPECT_EQ(reminder_due(AlertState::Firing, std::nullopt, policy), std::nullopt);
  for (const auto state : {AlertState::Acknowledged, AlertState::Resolved, AlertState::Rebaselined})
    EXPECT_EQ(reminder_due(state, week(8), policy), std::nullopt) << to_string(state);
}

TEST(ReminderDue, ZeroRepeatIntervalNeverRepeats) {
  const AlertPolicy never{std::chrono::nanoseconds{0}};
  EXPECT_EQ(reminder_due(AlertState::Firing, week(8), never), std::nullopt);
  EXPECT_EQ(
      notice_due(AlertKind::Step, AlertState::Firing, Notice::Firing, week(8), week(80), never),
      std::nullopt);
}

// What a notification must say, from the state and what was last said, whatever the history.
TEST(NoticeDue, FromTheCurrentStateAndTheLastNotice) {
  const AlertPolicy policy{24h};
  const auto t = week(8);
  const std::optional<Notice> none;
  const std::optional<core::Timestamp> never;
  // Firing: announced once, then again only when the reminder is due.
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Firing, none, never, t, policy),
            Notice::Firing);
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Firing, Notice::Firing, t, t + 23h, policy),
            std::nullopt);
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Firing, Notice::Firing, t, t + 24h, policy),
            Notice::Firing);
  // Acknowledged: announced if it never was, never repeated.
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Acknowledged, none, never, t, policy),
            Notice::Firing);
  EXPECT_EQ(
      notice_due(AlertKind::Step, AlertState::Acknowledged, Notice::Firing, t, t + 48h, policy),
      std::nullopt);
  // Resolved: announced once, also when it resolved before it was ever announced.
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Resolved, Notice::Firing, t, t, policy),
            Notice::Resolved);
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Resolved, none, never, t, policy),
            Notice::Resolved);
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Resolved, Notice::Resolved, t, t + 48h, policy),
            std::nullopt);
  // Rebaselined (accepted or superseded): never announced.
  EXPECT_EQ(notice_due(AlertKind::Step, AlertState::Rebaselined, none, never, t, policy),
            std::nullopt);
  EXPECT_EQ(
      notice_due(AlertKind::Step, AlertState::Rebaselined, Notice::Firing, t, t + 48h, policy),
      std::nullopt);
  // An environment incident (born rebaselined): announced once, never reminded.
  EXPECT_EQ(notice_due(AlertKind::Environment, AlertState::Rebaselined, none, never, t, policy),
            Notice::Firing);
  EXPECT_EQ(notice_due(AlertKind::Environment, AlertState::Rebaselined, Notice::Firing, t, t + 48h,
                       policy),
            std::nullopt);
}

TEST(AlertStateMachine, FiringToResolvedWhenARunIsBackInTheBand) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  EXPECT_TRUE(machine.observe(run_at(9, 110000)).empty());  // still out
  const auto resolved = machine.observe(run_at(10, 101000));
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].from, AlertState::Firing);
  EXPECT_EQ(resolved[0].alert.state, AlertState::Resolved);
  ASSERT_TRUE(resolved[0].alert.closed_by);
  EXPECT_EQ(resolved[0].alert.closed_by->median, std::chrono::nanoseconds(101000));
  EXPECT_EQ(resolved[0].cause, "run-10");
  EXPECT_FALSE(machine.open());
}

TEST(AlertStateMachine, AcknowledgedToResolvedStillNotifies) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  (void)machine.acknowledge(core::AlertId("a"), week(8) + 1h);
  const auto resolved = machine.observe(run_at(9, 100000));
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].from, AlertState::Acknowledged);
  EXPECT_EQ(resolved[0].alert.state, AlertState::Resolved);
  // Acknowledged or not, a resolve is announced.
  EXPECT_EQ(notice_due(AlertKind::Step, resolved[0].alert.state, Notice::Firing, week(8), week(9),
                       AlertPolicy{}),
            Notice::Resolved);
}

TEST(AlertStateMachine, AcknowledgedToRebaselinedByTheOperator) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  (void)machine.acknowledge(core::AlertId("a"), week(8) + 1h);
  const auto rebaselined = machine.rebaseline(core::AlertId("a"), week(8) + 2h);
  ASSERT_EQ(rebaselined.size(), 1u);
  EXPECT_EQ(rebaselined[0].alert.state, AlertState::Rebaselined);
  EXPECT_EQ(rebaselined[0].cause, "operator");
  EXPECT_EQ(notice_due(AlertKind::Step, rebaselined[0].alert.state, Notice::Firing, week(8),
                       week(9), AlertPolicy{}),
            std::nullopt);
  EXPECT_FALSE(machine.open());
  EXPECT_TRUE(machine.observe(run_at(9, 100000)).empty());  // nothing left to resolve
}

TEST(AlertStateMachine, ANewAlertSupersedesTheOpenOne) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  auto second = alert_on("b", 108000, 112000);
  second.onset.external_id = "run-12";
  const auto events = machine.fire(second, week(12));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].alert.id.long_form(), "a");
  EXPECT_EQ(events[0].alert.state, AlertState::Rebaselined);
  ASSERT_TRUE(events[0].alert.closed_by);
  EXPECT_EQ(events[0].alert.closed_by->external_id, "run-12");
  EXPECT_EQ(events[1].alert.id.long_form(), "b");
  EXPECT_TRUE(events[1].fired);
  EXPECT_EQ(machine.open()->id.long_form(), "b");
}

TEST(AlertStateMachine, IdempotentUnderReplay) {
  AlertStateMachine machine;
  const auto alert = alert_on("a", 98000, 102000);
  EXPECT_EQ(machine.fire(alert, week(8)).size(), 1u);
  EXPECT_TRUE(machine.fire(alert, week(8)).empty());
  EXPECT_TRUE(machine.observe(run_at(9, 110000)).empty());
  EXPECT_TRUE(machine.observe(run_at(9, 100000)).empty());  // same time again: replay, ignored
  EXPECT_TRUE(machine.observe(run_at(5, 100000)).empty());  // older: ignored
  EXPECT_EQ(machine.observe(run_at(10, 100000)).size(), 1u);
  EXPECT_TRUE(machine.fire(alert, week(11)).empty());  // a resolved alert never reopens
}

TEST(KeyMonitor, ReplayingAHistoryGivesTheSameNotifications) {
  std::vector<Observation> runs;
  for (int i = 0; i < 8; ++i) runs.push_back(run_at(i, 100000 + (i % 2) * 500));
  runs.push_back(run_at(8, 112000));
  runs.push_back(run_at(9, 100100));
  const auto notifications = [&] {
    KeyMonitor monitor(KeyLabels{"b", "p", "w", "e", "", "key"}, testing::without_jitter());
    std::vector<std::pair<std::string, AlertState>> out;
    for (const auto& run : runs) {
      for (const auto& event : monitor.observe(run).events) {
        out.emplace_back(event.alert.id.long_form(), event.alert.state);
      }
    }
    return out;
  };
  const auto first = notifications();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0], std::make_pair(std::string("key@run-8"), AlertState::Firing));
  EXPECT_EQ(first[1], std::make_pair(std::string("key@run-8"), AlertState::Resolved));
  EXPECT_EQ(notifications(), first);
}

Observation failed_at(int index, std::string reason) {
  Observation run = run_at(index, 0);
  run.status = core::RunStatus::RuntimeError;
  run.p20.reset();
  run.p80.reset();
  run.status_reason = std::move(reason);
  return run;
}

// One `failed` alert while a key's runs keep failing; a passing run resolves it; an inconclusive
// run does neither; an acknowledged one stays open, a rebaselined one lets the next failure open
// a new one.
TEST(KeyMonitor, FailedRunsOpenOneFailedAlertUntilARunPasses) {
  KeyMonitor monitor(KeyLabels{"b", "p", "w", "e", "", "key"}, testing::without_jitter());
  for (int i = 0; i < 6; ++i) (void)monitor.observe(run_at(i, 100000));
  const auto first = monitor.observe(failed_at(6, "correctness check failed"));
  ASSERT_EQ(first.events.size(), 1u);
  const Alert& failed = first.events[0].alert;
  EXPECT_TRUE(first.events[0].fired);
  EXPECT_EQ(failed.id.long_form(), "key@failed@run-6");
  EXPECT_EQ(failed.kind, AlertKind::Failed);
  EXPECT_EQ(failed.explanation, "correctness check failed");
  EXPECT_TRUE(monitor.observe(failed_at(7, "again")).events.empty());
  Observation inconclusive = run_at(8, 100000);
  inconclusive.status = core::RunStatus::IncompleteEvidence;
  EXPECT_TRUE(monitor.observe(inconclusive).events.empty());
  ASSERT_TRUE(monitor.open_failed_alert());

  const auto ack = monitor.act(failed.id, OperatorAction::Acknowledge, week(8) + 1h);
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].alert.state, AlertState::Acknowledged);
  EXPECT_EQ(monitor.open_failed_alert()->state, AlertState::Acknowledged);

  const auto passed = monitor.observe(run_at(9, 100000));
  ASSERT_EQ(passed.events.size(), 1u);
  EXPECT_EQ(passed.events[0].alert.id, failed.id);
  EXPECT_EQ(passed.events[0].from, AlertState::Acknowledged);
  EXPECT_EQ(passed.events[0].alert.state, AlertState::Resolved);
  ASSERT_TRUE(passed.events[0].alert.closed_by);
  EXPECT_EQ(passed.events[0].alert.closed_by->external_id, "run-9");
  EXPECT_FALSE(monitor.open_failed_alert());

  const auto again = monitor.observe(failed_at(10, "x"));
  ASSERT_EQ(again.events.size(), 1u);
  const auto rebaselined =
      monitor.act(again.events[0].alert.id, OperatorAction::Rebaseline, week(10) + 1h);
  ASSERT_EQ(rebaselined.size(), 1u);
  EXPECT_EQ(rebaselined[0].alert.state, AlertState::Rebaselined);
  const auto next = monitor.observe(failed_at(11, "y"));
  ASSERT_EQ(next.events.size(), 1u);
  EXPECT_EQ(next.events[0].alert.id.long_form(), "key@failed@run-11");
}

TEST(KeyMonitor, ActionsOnUnknownOrClosedAlertsChangeNothing) {
  KeyMonitor monitor(KeyLabels{"b", "p", "w", "e", "", "key"}, testing::without_jitter());
  EXPECT_TRUE(
      monitor.act(core::AlertId("key@nothing"), OperatorAction::Acknowledge, week(1)).empty());
  EXPECT_TRUE(
      monitor.act(core::AlertId("key@nothing"), OperatorAction::Rebaseline, week(1)).empty());
}

}  // namespace
}  // namespace kernelwatch::detectors
