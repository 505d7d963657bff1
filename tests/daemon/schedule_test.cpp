#include "daemon/schedule.hpp"

#include <chrono>

#include <gtest/gtest.h>

#include "core/record.hpp"
#include "core/run.hpp"
#include "runners/command_config.hpp"
#include "tests/daemon/support/posted_record.hpp"

namespace kernelwatch::daemon {
namespace {

using namespace std::chrono_literals;

config::BenchmarkConfig command_entry(const std::string& name,
                                      std::optional<std::chrono::milliseconds> interval) {
  config::BenchmarkConfig b;
  b.interval = interval;
  runners::CommandEntry command;
  command.name = name;
  command.command = {"true"};
  b.source = std::make_shared<runners::CommandSource>(std::move(command), runners::GpuSelection{});
  return b;
}

config::Config two_entries(std::chrono::milliseconds slow_interval = 1h) {
  config::Config c;
  c.schedule.interval = 15min;
  c.benchmarks = {command_entry("fast", 2s), command_entry("slow", slow_interval),
                  command_entry("default", std::nullopt)};
  return c;
}

const core::Timestamp t0{std::chrono::seconds(1'800'000'000)};

TEST(EntrySchedule, EachEntryIsDueAtItsOwnInterval) {
  EntrySchedule s;
  s.sync(two_entries(), t0, config::AtStart::Run);
  ASSERT_EQ(s.entries().size(), 3U);
  EXPECT_EQ(s.entries()[2].interval, 15min);  // schedule.interval when the entry has none
  EXPECT_EQ(s.earliest(), t0);
  EXPECT_EQ(s.take_due(t0, false, {}), (std::set<std::string>{"fast", "slow", "default"}));
  EXPECT_EQ(s.earliest(), t0 + 2s);
  EXPECT_EQ(s.take_due(t0 + 2s, false, {}), (std::set<std::string>{"fast"}));
  EXPECT_EQ(s.entries()[0].next, t0 + 4s);
  EXPECT_EQ(s.entries()[1].next, t0 + 1h);
  EXPECT_TRUE(s.take_due(t0 + 2500ms, false, {}).empty());
  // A triggered cycle runs every entry and restarts each one's interval.
  EXPECT_EQ(s.take_due(t0 + 10min, true, [] { return 0ms; }).size(), 3U);
  EXPECT_EQ(s.entries()[1].next, t0 + 10min + 1h);
}

TEST(EntrySchedule, WaitingAtStartPutsEachFirstRunOneOfItsIntervalsAway) {
  EntrySchedule s;
  s.sync(two_entries(), t0, config::AtStart::Wait);
  EXPECT_EQ(s.entries()[0].next, t0 + 2s);
  EXPECT_EQ(s.entries()[1].next, t0 + 1h);
  EXPECT_EQ(s.earliest(), t0 + 2s);
}

TEST(EntrySchedule, AReloadKeepsAnEntrysStateAndAShorterIntervalTakesEffectAtOnce) {
  EntrySchedule s;
  s.sync(two_entries(), t0, config::AtStart::Run);
  (void)s.take_due(t0, false, {});
  runners::Produced failed;
  failed.error = "exited with status 4: no GPU";
  s.record("slow", true, t0, t0 + 1s, failed);
  s.sync(two_entries(10min), t0 + 5min, config::AtStart::Run);
  ASSERT_EQ(s.entries().size(), 3U);
  EXPECT_EQ(s.entries()[1].last_error, "exited with status 4: no GPU");
  EXPECT_EQ(s.entries()[1].last_start, t0);
  EXPECT_EQ(s.entries()[1].next, t0 + 10min);  // its last start plus the new interval
  EXPECT_EQ(s.entries()[0].next, t0 + 2s);     // unchanged
  // A removed entry is gone; a new one runs at once (run_at_start) or waits its interval.
  config::Config c = two_entries(10min);
  c.benchmarks.erase(c.benchmarks.begin());
  c.benchmarks.push_back(command_entry("new", 30s));
  s.sync(c, t0 + 6min, config::AtStart::Wait);
  ASSERT_EQ(s.entries().size(), 3U);
  EXPECT_EQ(s.entries()[0].name, "slow");
  EXPECT_EQ(s.entries()[2].name, "new");
  EXPECT_EQ(s.entries()[2].next, t0 + 6min + 30s);
}

// A run of the e2e tests' synthetic key with `status`.
core::Run run_of(core::RunStatus status, std::string reason) {
  auto record = core::parse_record(testing::posted_record({.observed = t0}));
  EXPECT_TRUE(record.has_value()) << record.error().message;
  record->run.status = status;
  record->run.status_reason = std::move(reason);
  return core::Run::of(std::move(*record)).value();
}

TEST(EntrySchedule, AnExecutionCountsItsRunsAndKeepsTheNewestError) {
  EntrySchedule s;
  s.sync(two_entries(), t0, config::AtStart::Run);
  runners::Produced ok;
  ok.runs = {run_of(core::RunStatus::Passed, ""), run_of(core::RunStatus::Passed, "")};
  s.record("fast", true, t0, t0 + 1s, ok);
  runners::Produced bad;
  bad.runs = {run_of(core::RunStatus::RuntimeError, "killed by signal 9")};
  s.record("fast", false, t0 + 1s, t0 + 2s, bad);  // a second source of the same execution
  EXPECT_EQ(s.entries()[0].last_start, t0);
  EXPECT_EQ(s.entries()[0].last_end, t0 + 2s);
  EXPECT_EQ(s.entries()[0].last_runs, 3U);
  EXPECT_EQ(s.entries()[0].last_failed, 1U);
  EXPECT_EQ(s.entries()[0].last_error, "killed by signal 9");
  EXPECT_EQ(s.entries()[0].last_error_at, t0 + 2s);
  // The next execution starts its counts again and keeps the error until a newer one.
  s.record("fast", true, t0 + 4s, t0 + 5s, ok);
  EXPECT_EQ(s.entries()[0].last_runs, 2U);
  EXPECT_EQ(s.entries()[0].last_failed, 0U);
  EXPECT_EQ(s.entries()[0].last_error, "killed by signal 9");
  s.record_error("fast", t0 + 6s, "bad shape");
  EXPECT_EQ(s.entries()[0].last_error, "bad shape");
  s.record("gone", true, t0, t0, bad);  // an entry a reload removed: ignored
}

}  // namespace
}  // namespace kernelwatch::daemon
