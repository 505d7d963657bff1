// The one replay of stored history (replay/replay.hpp), on its own: runs written to a real SQLite
// file through the stores, replayed, and what the replay says of them checked against what the
// runs are (a step, the operator's actions, a cycle a crash left open, a key traced alone, the
// runs of each host and GPU). No daemon, no process.
#include "replay/replay.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/record.hpp"
#include "core/time.hpp"
#include "storage/alerts.hpp"
#include "storage/run_store.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::replay {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Runs are dated from the hour that began a week before the test started, never a calendar date.
core::Timestamp base_time() {
  static const core::Timestamp t =
      std::chrono::floor<std::chrono::hours>(core::Timestamp::clock::now()) -
      std::chrono::hours(168);
  return t;
}

struct RunSpec {
  std::string workload = "w";
  core::Timestamp at{};
  std::int64_t median_ns = 1'000'000;
  std::string host;  // "" for a run that names no host (imported history)
  std::string gpu;
};

// A run of one provider (p20/p80 at -+0.05%), as a client posts it.
core::Record record(const RunSpec& spec) {
  json labels = {{"provider", "liger"}, {"workload", spec.workload}};
  if (!spec.host.empty()) labels["host"] = spec.host;
  if (!spec.gpu.empty()) labels["gpu_index"] = spec.gpu;
  const json doc = {
      {"run",
       {{"apiVersion", "kernelindex.dev/v1alpha1"},
        {"kind", "BenchmarkRun"},
        {"spec",
         {{"status", "passed"},
          {"observedAt", core::format_timestamp(spec.at)},
          {"timing", {{"latencyNs", {{"median", spec.median_ns}}}, {"primaryStatistic", "median"}}},
          {"measurements", json::array({{{"metric", "latency"},
                                         {"statistic", "p20"},
                                         {"unit", "ns"},
                                         {"value", spec.median_ns - spec.median_ns / 2000}},
                                        {{"metric", "latency"},
                                         {"statistic", "p80"},
                                         {"unit", "ns"},
                                         {"value", spec.median_ns + spec.median_ns / 2000}}})},
          {"sourceNative",
           {{"source", "replay-test"},
            {"benchmark", "synthetic/forward"},
            {"externalId", "synthetic/forward/" + spec.workload + "/" + spec.host + spec.gpu + "/" +
                               core::format_id_timestamp(spec.at)}}}}},
        {"metadata", {{"labels", labels}}}}},
      {"protocol",
       {{"apiVersion", "kernelindex.dev/v1alpha1"},
        {"kind", "BenchmarkProtocol"},
        {"spec", {{"harness", {{"name", "replay-test"}}}, {"measurement", {{"timer", "e"}}}}},
        {"metadata", {{"name", "replay-test-protocol"}}}}},
      {"environment",
       {{"apiVersion", "kernelindex.dev/v1alpha1"},
        {"kind", "ExecutionEnvironment"},
        {"spec",
         {{"hardware",
           {{"vendor", "nvidia"},
            {"product", "NVIDIA H100"},
            {"formFactor", "80GB HBM3"},
            {"architecture", "sm_90"}}},
          {"software", json::object()}}}}}};
  auto parsed = core::parse_record(doc);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? *parsed : core::Record{};
}

// A quiet 1 ms key: +-0.2% from run to run.
std::int64_t quiet(int i) {
  return 1'000'000 + (i % 3 - 1) * 2'000;
}

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = storage::Connection::open(dir_ / "kw.db", storage::OpenMode::Create);
    ASSERT_TRUE(opened) << opened.error().message;
    store_.emplace(std::move(*opened));
  }

  // Stores runs in one transaction; with `judged`, as the daemon stores a run it judged (its
  // rerun confirms it), each in its own cycle, left open. Returns the runs' key ids.
  std::vector<std::int64_t> store(const std::vector<RunSpec>& runs, bool judged = false) {
    std::vector<std::int64_t> keys;
    auto tx = store_->begin();
    EXPECT_TRUE(tx) << tx.error().message;
    if (!tx) return keys;
    storage::RunStore run_store(*store_);
    for (const auto& spec : runs) {
      auto inserted = run_store.insert_run(*tx, record(spec), "");
      EXPECT_TRUE(inserted) << inserted.error().message;
      if (!inserted) return keys;
      keys.push_back(inserted->key_id);
      if (judged) {
        const storage::Judgement judgement{storage::Confirmation::Next, spec.at, ++cycle_};
        EXPECT_TRUE(run_store.record_judgement(*tx, inserted->key_id, spec.at, judgement));
      }
    }
    EXPECT_TRUE(tx->commit());
    return keys;
  }

  // 20 quiet runs a minute apart from `t0`, then `stepped` runs 30% slower.
  std::vector<RunSpec> stepping(const std::string& workload, core::Timestamp t0, int stepped = 5) {
    std::vector<RunSpec> runs;
    for (int i = 0; i < 20 + stepped; ++i) {
      const std::int64_t median = i < 20 ? quiet(i) : quiet(i) * 13 / 10;
      runs.push_back({workload, t0 + std::chrono::minutes(i), median, "", ""});
    }
    return runs;
  }

  void act(const core::AlertId& alert_id, std::int64_t key_id, core::OperatorAction action,
           core::Timestamp at) {
    auto tx = store_->begin();
    ASSERT_TRUE(tx) << tx.error().message;
    ASSERT_TRUE(storage::AlertStore(*store_).record_action(*tx, {alert_id, key_id, action, at}));
    ASSERT_TRUE(tx->commit());
  }

  Replay replayed(const Options& options = {}) {
    auto r = replay(*store_, options);
    EXPECT_TRUE(r) << r.error().message;
    return r ? std::move(*r) : Replay(options.parameters);
  }

  kernelwatch::testing::TempDir dir_;
  // Stores runs in one transaction, each with the judgement `judgement_of` gives it (none: as
  // imported), and closes their cycles unless `open` (a crash left them open).
  void store_with(
      const std::vector<RunSpec>& runs,
      const std::function<std::optional<storage::Judgement>(const RunSpec&)>& judgement_of,
      bool open = false) {
    auto tx = store_->begin();
    ASSERT_TRUE(tx) << tx.error().message;
    storage::RunStore run_store(*store_);
    for (const auto& spec : runs) {
      auto inserted = run_store.insert_run(*tx, record(spec), "");
      ASSERT_TRUE(inserted) << inserted.error().message;
      if (const auto judgement = judgement_of(spec)) {
        ASSERT_TRUE(run_store.record_judgement(*tx, inserted->key_id, spec.at, *judgement));
      }
    }
    if (!open) {
      ASSERT_TRUE(run_store.close_judged_cycles(*tx));
    }
    ASSERT_TRUE(tx->commit());
  }

  std::optional<storage::Connection> store_;
  std::int64_t cycle_ = 0;
};

// Another host's runs a key was started from (storage.warm_start) may fall among this host's
// runs in time: a replay reads them as that key's start only, so a cycle of this host in which
// four keys stepped stays one cycle, and its steps one incident. Read as imported history, the
// seeds' host repeating within the cycle would close it half way (a new round) and the four
// steps would be four alerts.
TEST_F(ReplayTest, SeedsAmongThisHostsRunsLeaveItsCyclesWhole) {
  const core::Timestamp t0 = base_time();
  std::vector<RunSpec> history;
  std::vector<RunSpec> cycle;
  for (int k = 0; k < 4; ++k) {
    const std::string workload = "w" + std::to_string(k);
    for (int i = 0; i < 20; ++i)
      history.push_back({workload, t0 + std::chrono::minutes(i), quiet(i), "", ""});
    cycle.push_back({workload, t0 + std::chrono::minutes(30 + 2 * k), quiet(k) * 13 / 10, "h", ""});
  }
  std::vector<RunSpec> seeds;
  for (int i = 0; i < 6; ++i) {
    seeds.push_back({"seeded", t0 + std::chrono::minutes(25 + 2 * i) + 30s, quiet(i), "a", ""});
  }
  store_with(history, [](const RunSpec&) { return std::nullopt; });
  store_with(cycle, [](const RunSpec& spec) {
    return storage::Judgement{storage::Confirmation::Alone, spec.at, 7};
  });
  store_with(seeds, [](const RunSpec& spec) { return storage::Judgement::seed(spec.at); });

  const Replay r = replayed();
  EXPECT_EQ(r.runs, history.size() + cycle.size() + seeds.size());
  ASSERT_EQ(r.alerts.size(), 1u) << "the cycle's four steps, one incident";
  EXPECT_EQ(r.alerts[0].members.size(), 4u);
  // The seeded key was built from its seeds: its newest run read, judged in its band.
  const detectors::Watch::KeyView* seeded = nullptr;
  for (const auto* view : r.watch.keys()) {
    if (view->monitor->key().workload == "seeded") seeded = view;
  }
  ASSERT_NE(seeded, nullptr);
  ASSERT_TRUE(seeded->last_run);
  EXPECT_EQ(seeded->last_run->observed_at, seeds.back().at);
  EXPECT_EQ(seeded->last_verdict.kind, detectors::VerdictKind::InBand)
      << seeded->last_verdict.explanation;
}

TEST_F(ReplayTest, AStepInImportedHistoryIsOneAlertAtTheStepConfirmedByTheNextRun) {
  const auto runs = stepping("w", base_time());
  (void)store(runs);
  const Replay r = replayed();
  EXPECT_EQ(r.runs, runs.size());
  ASSERT_EQ(r.labels.size(), 1u);
  ASSERT_EQ(r.alerts.size(), 1u);
  const core::Alert& alert = r.alerts[0];
  EXPECT_EQ(alert.kind, core::AlertKind::Step);
  EXPECT_EQ(alert.direction, core::Direction::Regression);
  EXPECT_EQ(alert.state, core::AlertState::Firing);
  EXPECT_EQ(alert.onset.observed_at, runs[20].at) << "the step's first run";
  EXPECT_EQ(alert.fired.observed_at, runs[21].at) << "confirmed by the next run (kHistoryConfirm)";
  EXPECT_NEAR(alert.relative_change, 0.3, 0.02);
  EXPECT_TRUE(r.unsettled.empty()) << "imported runs have no cycle to leave open";
  EXPECT_EQ(r.unsettled_runs, 0u);
  EXPECT_EQ(r.key_ids.at(alert.key.identity()), r.labels.begin()->first);
  // The same store replayed again says the same.
  const Replay again = replayed();
  ASSERT_EQ(again.alerts.size(), 1u);
  EXPECT_EQ(again.alerts[0].id, alert.id);
  EXPECT_EQ(again.changed_at, r.changed_at);
}

TEST_F(ReplayTest, WithConfirmNoneTheStepFiresAtItsFirstRun) {
  const auto runs = stepping("w", base_time());
  (void)store(runs);
  Options options;
  options.confirm = detectors::ConfirmPolicy::None;
  const Replay r = replayed(options);
  ASSERT_EQ(r.alerts.size(), 1u);
  EXPECT_EQ(r.alerts[0].fired.observed_at, runs[20].at);
}

TEST_F(ReplayTest, TheOperatorsAcknowledgementAndRebaselineReplayAtTheirPlaceInTime) {
  const auto runs = stepping("w", base_time(), 10);
  const auto keys = store(runs);
  const Replay before = replayed();
  ASSERT_EQ(before.alerts.size(), 1u);
  const core::AlertId id = before.alerts[0].id;

  act(id, keys[0], core::OperatorAction::Acknowledge, runs[23].at + 1s);
  const Replay acked = replayed();
  ASSERT_EQ(acked.alerts.size(), 1u);
  EXPECT_EQ(acked.alerts[0].state, core::AlertState::Acknowledged);
  EXPECT_EQ(acked.changed_at.at(id), runs[23].at + 1s);
  Options without;
  without.operator_actions = false;
  EXPECT_EQ(replayed(without).alerts.at(0).state, core::AlertState::Firing);

  // A rebaseline after the acknowledgement: the slower level becomes the key's band, so the runs
  // after it are in band, and the traced run just after it says it came after a rebaseline.
  act(id, keys[0], core::OperatorAction::Rebaseline, runs[26].at + 1s);
  Options traced;
  traced.only_key = keys[0];
  traced.trace = true;
  const Replay r = replayed(traced);
  ASSERT_EQ(r.alerts.size(), 1u);
  EXPECT_EQ(r.alerts[0].state, core::AlertState::Rebaselined);
  ASSERT_EQ(r.trace.size(), runs.size());
  for (std::size_t i = 0; i < r.trace.size(); ++i) {
    EXPECT_EQ(r.trace[i].rebaseline, i == 27) << "run " << i;
    if (i > 27) {
      EXPECT_NE(r.trace[i].verdict.kind, detectors::VerdictKind::Regression) << "run " << i;
    }
  }
}

TEST_F(ReplayTest, OneKeyTracedIsJudgedAsInTheWholeReplayAndNoOtherKeyIsRead) {
  const core::Timestamp t0 = base_time();
  auto runs = stepping("a", t0);
  const auto b = stepping("b", t0 + 30s, 3);
  runs.insert(runs.end(), b.begin(), b.end());
  const auto keys = store(runs);
  const std::int64_t key_b = keys.back();
  ASSERT_NE(keys.front(), key_b);

  Options options;
  options.only_key = key_b;
  options.trace = true;
  const Replay r = replayed(options);
  ASSERT_EQ(r.labels.size(), 1u);
  EXPECT_EQ(r.labels.begin()->first, key_b);
  EXPECT_EQ(r.runs, b.size());
  ASSERT_EQ(r.trace.size(), b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(r.trace[i].run.observed_at, b[i].at) << "oldest first";
  }
  EXPECT_EQ(r.trace[20].verdict.kind, detectors::VerdictKind::Regression);
  EXPECT_EQ(r.trace[20].role, detectors::RunRole::Pending);
  EXPECT_EQ(r.trace[21].role, detectors::RunRole::Confirmed);
  EXPECT_EQ(r.trace[5].role, detectors::RunRole::Accepted);
  ASSERT_EQ(r.alerts.size(), 1u);

  // The whole replay fires the same alert for the key (and one for the other).
  const Replay whole = replayed();
  ASSERT_EQ(whole.alerts.size(), 2u);
  const auto same = std::find_if(whole.alerts.begin(), whole.alerts.end(),
                                 [&](const core::Alert& a) { return a.id == r.alerts[0].id; });
  ASSERT_NE(same, whole.alerts.end());
  EXPECT_EQ(same->fired.observed_at, r.alerts[0].fired.observed_at);
}

TEST_F(ReplayTest, AnAlertFiredInACycleACrashLeftOpenIsUnsettledUntilTheCycleCloses) {
  const auto runs = stepping("w", base_time());
  (void)store(runs, /*judged=*/true);
  const Replay open = replayed();
  ASSERT_EQ(open.alerts.size(), 1u);
  EXPECT_EQ(open.unsettled_runs, runs.size());
  EXPECT_TRUE(open.unsettled.contains(open.alerts[0].id));

  auto tx = store_->begin();
  ASSERT_TRUE(tx);
  ASSERT_TRUE(storage::RunStore(*store_).close_judged_cycles(*tx));
  ASSERT_TRUE(tx->commit());
  const Replay closed = replayed();
  ASSERT_EQ(closed.alerts.size(), 1u);
  EXPECT_EQ(closed.alerts[0].id, open.alerts[0].id);
  EXPECT_EQ(closed.unsettled_runs, 0u);
  EXPECT_TRUE(closed.unsettled.empty());
}

TEST_F(ReplayTest, RunsAreCountedByHostAndGpuAsTheyAreRead) {
  const core::Timestamp t0 = base_time();
  std::vector<RunSpec> runs;
  for (int i = 0; i < 6; ++i) {
    runs.push_back({"w", t0 + std::chrono::minutes(i), quiet(i), "h100-a", std::to_string(i % 2)});
  }
  runs.push_back({"w", t0 + 10min, quiet(7), "h100-b", "0"});
  runs.push_back({"w", t0 + 11min, quiet(8), "", ""});  // names no host: not counted
  (void)store(runs);
  const Replay r = replayed();
  EXPECT_EQ(r.runs, runs.size());
  std::map<std::string, std::pair<std::int64_t, core::Timestamp>> seen;
  for (const auto& [unit, count] : r.placed.all()) {
    seen[count.placement.host + "/" + count.placement.gpu] = {count.runs, count.last_observed};
  }
  const std::map<std::string, std::pair<std::int64_t, core::Timestamp>> expected{
      {"h100-a/0", {3, runs[4].at}}, {"h100-a/1", {3, runs[5].at}}, {"h100-b/0", {1, runs[6].at}}};
  EXPECT_EQ(seen, expected);
}

TEST(PlacedCounts, OneCountPerHostAndGpuWhateverTheirIdsHold) {
  PlacedCounts counts;
  const core::Timestamp t0 = base_time();
  const core::Placement slash{"h/1", "0", "GPU-a/b", ""};
  const core::Placement other{"h", "1/0", "", ""};
  counts.count(slash, t0);
  counts.count(slash, t0 - 1h);  // an older run: the newest stays the last observed
  counts.count(other, t0 + 1h);
  counts.count(core::Placement{}, t0);  // names nothing: not counted
  ASSERT_EQ(counts.all().size(), 2u);
  EXPECT_EQ(counts.slot(slash).runs, 2);
  EXPECT_EQ(counts.slot(slash).last_observed, t0);
  EXPECT_EQ(counts.slot(other).runs, 1);
  EXPECT_EQ(counts.slot(core::Placement{"h", "2", "", ""}).runs, 0) << "made when new";
  EXPECT_EQ(counts.all().size(), 3u);
}

TEST(ConfirmOf, ARunIsConfirmedAsTheDaemonJudgedItUnlessTheOptionsSayHow) {
  storage::RunSummary imported;
  storage::RunSummary rerun;
  rerun.judgement = storage::Judgement{storage::Confirmation::Next, base_time(), 1};
  storage::RunSummary posted;
  posted.judgement = storage::Judgement{storage::Confirmation::Alone, base_time(), 2};
  storage::RunSummary late;
  late.judgement = storage::Judgement{storage::Confirmation::NotJudged, base_time(), 3};
  const Options as_judged;
  EXPECT_EQ(confirm_of(imported, as_judged), kHistoryConfirm);
  EXPECT_EQ(confirm_of(rerun, as_judged), detectors::ConfirmPolicy::Next);
  EXPECT_EQ(confirm_of(posted, as_judged), detectors::ConfirmPolicy::None);
  EXPECT_EQ(confirm_of(late, as_judged), std::nullopt);
  Options none;
  none.confirm = detectors::ConfirmPolicy::None;
  EXPECT_EQ(confirm_of(imported, none), detectors::ConfirmPolicy::None);
  EXPECT_EQ(confirm_of(rerun, none), detectors::ConfirmPolicy::None);
  EXPECT_EQ(confirm_of(late, none), std::nullopt) << "a run never judged is never judged";
}

// Controls (storage.fleet_controls) are stored with the place of the step they were read for,
// often hours after their own observedAt: the replay gives each to its step at once and never
// queues it among this host's late runs, whose release (and the operator's actions before it)
// it would bring forward. Two controls of another key observed before an alert fired, read for
// later steps, leave the alert's acknowledgement where it was (with the controls in the late
// queue, the acknowledgement was replayed before the alert existed and lost: firing).
TEST_F(ReplayTest, ControlsReadForLaterStepsMoveNoRunAndNoActionOfThisHost) {
  const auto runs = stepping("w", base_time(), 10);
  const auto keys = store(runs);
  const Replay before = replayed();
  ASSERT_EQ(before.alerts.size(), 1u);
  act(before.alerts[0].id, keys[0], core::OperatorAction::Acknowledge, runs[23].at + 1s);
  ASSERT_EQ(replayed().alerts.at(0).state, core::AlertState::Acknowledged);
  const std::vector<RunSpec> controls = {{"b", runs[19].at + 10s, 1'000'000, "x", ""},
                                         {"b", runs[19].at + 20s, 1'000'000, "x", ""}};
  int n = 0;
  store_with(controls, [&](const RunSpec&) {
    return storage::Judgement::control(runs[24].at + std::chrono::seconds(n++));
  });
  const Replay after = replayed();
  ASSERT_EQ(after.alerts.size(), 1u);
  EXPECT_EQ(after.alerts[0].id, before.alerts[0].id);
  EXPECT_EQ(after.alerts[0].state, core::AlertState::Acknowledged);
}

// A cycle the daemon judged but never closed (a crash) is decided at the replay's last close;
// Options::before_last_close lets the daemon's rebuild read its fleet's runs for the steps still
// held there, as its own close would have (storage.fleet_controls): with the other hosts' runs
// in line, host_d's six steps are one incident about host_d; without the hook, the usual one.
TEST_F(ReplayTest, TheLastOpenCycleIsDecidedWithWhatBeforeLastCloseGivesTheWatch) {
  const core::Timestamp t0 = base_time();
  const core::Timestamp step_at = t0 + std::chrono::hours(3);
  std::vector<RunSpec> quiet_runs, steps;
  for (int k = 0; k < 6; ++k) {
    const std::string workload = "w" + std::to_string(k);
    for (int i = 0; i < 20; ++i) {
      quiet_runs.push_back({workload, t0 + std::chrono::minutes(i), quiet(i), "host_d", ""});
    }
    steps.push_back(
        {workload, step_at + std::chrono::seconds(k), quiet(0) * 112 / 100, "host_d", ""});
  }
  store(quiet_runs);
  store_with(
      steps,
      [](const RunSpec& spec) {
        return storage::Judgement{storage::Confirmation::Alone, spec.at, 7};
      },
      /*open=*/true);
  std::size_t held = 0;
  Options options;
  options.before_last_close = [&](detectors::Watch& watch) -> core::Status {
    for (const auto& step : watch.held_steps()) {
      ++held;
      for (const std::string host : {"host_a", "host_b", "host_c"}) {
        for (int i = 0; i < 4; ++i) {
          detectors::Observation run;
          run.observed_at =
              i < 3 ? t0 + std::chrono::minutes(i) : step_at - std::chrono::minutes(5);
          run.median = std::chrono::nanoseconds(quiet(i));
          core::Placement where;
          where.host = host;
          run.placement = where;
          watch.add_fleet_run(*step.key, run, step.trigger->run.observed_at);
        }
      }
    }
    return {};
  };
  const Replay with_fleet = replayed(options);
  EXPECT_EQ(held, 6u);
  ASSERT_EQ(with_fleet.alerts.size(), 1u);
  EXPECT_EQ(with_fleet.alerts[0].placement.host, "host_d");
  EXPECT_EQ(with_fleet.alerts[0].members.size(), 6u);
  EXPECT_TRUE(with_fleet.unsettled.contains(with_fleet.alerts[0].id));
  const Replay without = replayed();
  ASSERT_EQ(without.alerts.size(), 1u);
  EXPECT_TRUE(without.alerts[0].placement.empty());
  // Its error ends the replay.
  options.before_last_close = [](detectors::Watch&) -> core::Status {
    return tl::unexpected(core::Error{core::ErrorCode::Unavailable, "the fleet is away"});
  };
  const auto failed = replay(*store_, options);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "the fleet is away");
}

// A control read for a later step (another host's run posted late, inside an earlier step's
// window) is no control of the earlier step, though the replay reads it, by its observedAt, before
// that step's close and after another close: host_d's six steps at minute 200 were decided
// against hosts a, b and c, which stayed, as one incident about host_d; hosts a and b's runs at
// minute 196, 12% slower, read only for a step at minute 500, leave that decision as it was.
TEST_F(ReplayTest, AControlReadForALaterStepIsNoControlOfAnEarlierOne) {
  const core::Timestamp t0 = base_time();
  const auto minute = [&](int m) { return t0 + std::chrono::minutes(m); };
  std::vector<RunSpec> quiet_runs, steps, controls, later;
  for (int k = 0; k < 6; ++k) {
    const std::string workload = "w" + std::to_string(k);
    for (int i = 0; i < 20; ++i)
      quiet_runs.push_back({workload, minute(i), quiet(i), "host_d", ""});
    steps.push_back(
        {workload, minute(200) + std::chrono::seconds(k), quiet(0) * 112 / 100, "host_d", ""});
    for (const std::string host : {"host_a", "host_b", "host_c"}) {
      const int h = host.back() - 'a';
      for (int i = 0; i < 3; ++i) {
        controls.push_back(
            {workload, minute(i) + std::chrono::seconds(10 + h), quiet(i), host, ""});
      }
      controls.push_back(
          {workload, minute(195) + std::chrono::seconds(10 + h), quiet(3), host, ""});
      if (h < 2) {
        later.push_back(
            {workload, minute(196) + std::chrono::seconds(10 + h), quiet(4) * 112 / 100, host, ""});
      }
    }
  }
  store(quiet_runs);
  store_with(steps, [](const RunSpec& spec) {
    return storage::Judgement{storage::Confirmation::Alone, spec.at, 7};
  });
  const auto step_of = [&](const RunSpec& spec) {
    return storage::Judgement::control(minute(200) + std::chrono::seconds(spec.workload[1] - '0'));
  };
  store_with(controls, step_of);
  const Replay decided = replayed();
  ASSERT_EQ(decided.alerts.size(), 1u);
  ASSERT_EQ(decided.alerts[0].placement.host, "host_d");
  store_with(later, [&](const RunSpec&) { return storage::Judgement::control(minute(500)); });
  const Replay again = replayed();
  ASSERT_EQ(again.alerts.size(), 1u);
  EXPECT_EQ(again.alerts[0].id, decided.alerts[0].id);
  EXPECT_EQ(again.alerts[0].placement.host, "host_d");
  // Read for that very step, the same runs show hosts a and b moved too: not the host's.
  store_with(later, step_of);
  const Replay moved = replayed();
  ASSERT_EQ(moved.alerts.size(), 1u);
  EXPECT_TRUE(moved.alerts[0].placement.empty());
}

// Late runs (judged just after their key's newer run) are judged when the stream reaches their
// place, whatever comes first: k1's late run, judged at minute 40, does not release k2's, judged
// just after k2's run at minute 30, before that run (k2's detector sees its runs in the order the
// daemon judged them: its newest is the late one).
TEST_F(ReplayTest, ALateRunReleasesNoOtherLateRunBeforeItsPlace) {
  const core::Timestamp t0 = base_time();
  const auto minute = [&](int m) { return t0 + std::chrono::minutes(m); };
  std::vector<RunSpec> runs;
  std::map<std::pair<std::string, core::Timestamp>, core::Timestamp> order;
  for (const std::string workload : {"k1", "k2"}) {
    for (int i = 0; i < 10; ++i) runs.push_back({workload, minute(i), quiet(i), "", ""});
  }
  runs.push_back({"k2", minute(30), quiet(10), "", ""});
  runs.push_back({"k2", minute(20), quiet(11), "", ""});  // late: judged after minute 30's
  order[{"k2", minute(20)}] = minute(30) + std::chrono::nanoseconds(1);
  runs.push_back({"k1", minute(25), quiet(12), "", ""});  // late: judged at minute 40
  order[{"k1", minute(25)}] = minute(40);
  std::int64_t cycle = 0;
  store_with(runs, [&](const RunSpec& spec) {
    const auto late = order.find({spec.workload, spec.at});
    return storage::Judgement{storage::Confirmation::Alone,
                              late == order.end() ? spec.at : late->second, ++cycle};
  });
  const Replay r = replayed();
  for (const auto* view : r.watch.keys()) {
    ASSERT_TRUE(view->last_run);
    const core::Timestamp newest = view->monitor->key().workload == "k2"
                                       ? minute(30) + std::chrono::nanoseconds(1)
                                       : minute(40);
    EXPECT_EQ(view->last_run->observed_at, newest) << view->monitor->key().workload;
  }
}

}  // namespace
}  // namespace kernelwatch::replay
