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
  alert.id = id;
  alert.band.lower = std::chrono::nanoseconds(lower);
  alert.band.upper = std::chrono::nanoseconds(upper);
  alert.external_id = "run-8";
  return alert;
}

TEST(AlertStateMachine, FiringNotifiesOnce) {
  AlertStateMachine machine;
  const auto events = machine.fire(alert_on("a", 98000, 102000), week(8));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].to, AlertState::Firing);
  EXPECT_EQ(events[0].notify, Notify::Fired);
  ASSERT_TRUE(machine.open());
  EXPECT_EQ(machine.open()->state, AlertState::Firing);
}

TEST(AlertStateMachine, FiringToAcknowledgedIsSilentAndStopsRepeats) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  const auto ack = machine.acknowledge("a", week(8) + 1h);
  ASSERT_EQ(ack.size(), 1u);
  EXPECT_EQ(ack[0].from, AlertState::Firing);
  EXPECT_EQ(ack[0].to, AlertState::Acknowledged);
  EXPECT_EQ(ack[0].notify, Notify::None);
  EXPECT_TRUE(machine.acknowledge("a", week(8) + 2h).empty());  // idempotent
  EXPECT_TRUE(machine.acknowledge("other", week(8) + 2h).empty());
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
}

TEST(AlertStateMachine, FiringToResolvedWhenARunIsBackInTheBand) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  EXPECT_TRUE(machine.observe(run_at(9, 110000)).empty());  // still out
  const auto resolved = machine.observe(run_at(10, 101000));
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].from, AlertState::Firing);
  EXPECT_EQ(resolved[0].to, AlertState::Resolved);
  EXPECT_EQ(resolved[0].notify, Notify::Resolved);
  EXPECT_EQ(resolved[0].cause, "run-10");
  EXPECT_FALSE(machine.open());
}

TEST(AlertStateMachine, AcknowledgedToResolvedStillNotifies) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  (void)machine.acknowledge("a", week(8) + 1h);
  const auto resolved = machine.observe(run_at(9, 100000));
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].from, AlertState::Acknowledged);
  EXPECT_EQ(resolved[0].notify, Notify::Resolved);
}

TEST(AlertStateMachine, AcknowledgedToRebaselinedByTheOperator) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  (void)machine.acknowledge("a", week(8) + 1h);
  const auto rebaselined = machine.rebaseline("a", week(8) + 2h);
  ASSERT_EQ(rebaselined.size(), 1u);
  EXPECT_EQ(rebaselined[0].to, AlertState::Rebaselined);
  EXPECT_EQ(rebaselined[0].cause, "operator");
  EXPECT_EQ(rebaselined[0].notify, Notify::None);
  EXPECT_FALSE(machine.open());
  EXPECT_TRUE(machine.observe(run_at(9, 100000)).empty());  // nothing left to resolve
}

TEST(AlertStateMachine, ANewAlertSupersedesTheOpenOne) {
  AlertStateMachine machine;
  (void)machine.fire(alert_on("a", 98000, 102000), week(8));
  auto second = alert_on("b", 108000, 112000);
  second.onset_external_id = "run-12";
  const auto events = machine.fire(second, week(12));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].alert_id, "a");
  EXPECT_EQ(events[0].to, AlertState::Rebaselined);
  EXPECT_EQ(events[1].alert_id, "b");
  EXPECT_EQ(events[1].notify, Notify::Fired);
  EXPECT_EQ(machine.open()->id, "b");
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
    KeyMonitor monitor(KeyLabels{"b", "p", "w", "e", "", "key"}, DetectorParameters{});
    std::vector<std::pair<std::string, Notify>> out;
    for (const auto& run : runs) {
      for (const auto& event : monitor.observe(run).events) {
        if (event.notify != Notify::None) out.emplace_back(event.alert_id, event.notify);
      }
    }
    return out;
  };
  const auto first = notifications();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0], std::make_pair(std::string("key@run-8"), Notify::Fired));
  EXPECT_EQ(first[1], std::make_pair(std::string("key@run-8"), Notify::Resolved));
  EXPECT_EQ(notifications(), first);
}

}  // namespace
}  // namespace kernelwatch::detectors
