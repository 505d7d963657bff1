// The daemon's detection path over a real SQLite file: synthetic kernelindex records in, verdicts
// and alert state out. Notifications are not inspected here (the daemon end-to-end tests check
// what reaches a receiver).
#include "daemon/engine.hpp"

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "core/key.hpp"
#include "core/run.hpp"
#include "core/time.hpp"
#include "runners/sources.hpp"
#include "storage/alerts.hpp"
#include "storage/outbox.hpp"
#include "storage/run_store.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The test's clock: runs are dated from the hour that began a week before the test started (never
// from a calendar date), and the engine is told the time explicitly.
core::Timestamp base_time() {
  static const core::Timestamp t =
      std::chrono::floor<std::chrono::hours>(core::Timestamp::clock::now()) -
      std::chrono::hours(168);
  return t;
}

// Run `index` is observed `index` minutes after base_time(); the engine is told it arrives 30 s
// later.
core::Timestamp observed(int index) {
  return base_time() + std::chrono::minutes(index);
}
core::Timestamp arrival(int index) {
  return observed(index) + 30s;
}

struct Series {
  std::string source = "engine-test";  // "kernelwatch": the daemon's own runs
  std::string provider = "posted";
  std::string workload = "synthetic-engine";
};

// One kernelindex record of a synthetic key: median with a +-0.05% p20/p80, or a failed run.
json record_json(const Series& series, int index, std::int64_t median_ns,
                 const std::string& status = "passed") {
  const core::Timestamp at = observed(index);
  const json hardware = {{"vendor", "nvidia"},
                         {"product", "NVIDIA H100"},
                         {"formFactor", "80GB HBM3"},
                         {"architecture", "sm_90"}};
  json spec = {{"status", status},
               {"observedAt", core::format_timestamp(at)},
               {"sourceNative",
                {{"source", series.source},
                 {"benchmark", "synthetic/forward"},
                 {"externalId", "synthetic/forward/" + series.provider + "/" + series.workload +
                                    "/" + core::format_id_timestamp(at)}}}};
  if (status == "failed") {
    spec["statusReason"] = "correctness check failed: max abs error 0.5";
  } else {
    spec["timing"] = {{"latencyNs", {{"median", median_ns}}}, {"primaryStatistic", "median"}};
    spec["measurements"] = json::array({{{"metric", "latency"},
                                         {"statistic", "p20"},
                                         {"unit", "ns"},
                                         {"value", median_ns - median_ns / 2000}},
                                        {{"metric", "latency"},
                                         {"statistic", "p80"},
                                         {"unit", "ns"},
                                         {"value", median_ns + median_ns / 2000}}});
  }
  return json{{"run",
               {{"apiVersion", "kernelindex.dev/v1alpha1"},
                {"kind", "BenchmarkRun"},
                {"spec", spec},
                {"metadata",
                 {{"labels", {{"provider", series.provider}, {"workload", series.workload}}}}}}},
              {"protocol",
               {{"apiVersion", "kernelindex.dev/v1alpha1"},
                {"kind", "BenchmarkProtocol"},
                {"spec",
                 {{"harness", {{"name", "engine-test"}}},
                  {"measurement", {{"timer", "cuda_events"}, {"primaryStatistic", "median"}}}}},
                {"metadata", {{"name", "engine-test-protocol"}}}}},
              {"environment",
               {{"apiVersion", "kernelindex.dev/v1alpha1"},
                {"kind", "ExecutionEnvironment"},
                {"metadata", {{"name", "test-nvidia-h100"}}},
                {"spec", {{"hardware", hardware}, {"software", json::object()}}}}}};
}

core::Record record(const Series& series, int index, std::int64_t median_ns,
                    const std::string& status = "passed") {
  auto parsed = core::parse_record(record_json(series, index, median_ns, status));
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? *parsed : core::Record{};
}

// The run of a record, its key derived, as a producer or the POST handler hands it to the engine.
core::Run run_of(const core::Record& record) {
  auto run = core::Run::of(record);
  EXPECT_TRUE(run) << run.error().message;
  return std::move(run).value();
}

// 1% noise around 1 ms, deterministic.
std::int64_t noisy(int i) {
  return 1'000'000 + static_cast<std::int64_t>(10'000 * std::sin(i * 1.7));
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = storage::Connection::open(dir_ / "kw.db", storage::OpenMode::Create);
    ASSERT_TRUE(opened) << opened.error().message;
    store_.emplace(std::move(*opened));
    options_.destinations = {"hook"};
    options_.host = "engine-test-host";
    engine_.emplace(*store_, options_);
    ASSERT_TRUE(engine_->rebuild());
  }

  // One run, as a cycle of its own (a posted batch of one): processed, then the cycle closed, so
  // `fired` also holds the alert its step fired at the close.
  Processed process(const core::Record& r, core::Timestamp now) {
    auto processed = engine_->process(run_of(r), now);
    EXPECT_TRUE(processed) << processed.error().message;
    if (!processed) return Processed{};
    auto closed = engine_->close_cycle(now);
    EXPECT_TRUE(closed) << closed.error().message;
    if (closed) {
      for (const auto& alert : closed->fired) processed->fired.push_back(alert.id);
      for (const auto& incident : closed->incidents) processed->fired.push_back(incident.id);
    }
    return *processed;
  }
  Processed process(const Series& series, int index, std::int64_t median_ns,
                    const std::string& status = "passed") {
    return process(record(series, index, median_ns, status), arrival(index));
  }
  // Runs 0..count-1 of the series at 1 ms with 1% noise; each is accepted, none alerts.
  void stable_history(const Series& series, int count) {
    for (int i = 0; i < count; ++i) {
      const auto p = process(series, i, noisy(i));
      ASSERT_FALSE(p.duplicate) << i;
      ASSERT_TRUE(p.fired.empty()) << "run " << i << ": " << p.verdict.explanation;
    }
  }

  std::optional<storage::AlertRow> alert(const core::AlertId& id) {
    auto found = storage::AlertStore(*store_).find(id);
    EXPECT_TRUE(found) << found.error().message;
    return found ? *found : std::nullopt;
  }
  std::int64_t count(std::string_view state) {
    auto n = storage::AlertStore(*store_).count_by_state(core::parse_alert_state(state).value());
    EXPECT_TRUE(n) << n.error().message;
    return n.value_or(-1);
  }
  std::int64_t run_count() {
    auto n = storage::RunStore(*store_).run_count();
    EXPECT_TRUE(n) << n.error().message;
    return n.value_or(-1);
  }

  kernelwatch::testing::TempDir dir_;
  std::optional<storage::Connection> store_;
  EngineOptions options_;
  std::optional<Engine> engine_;
};

TEST_F(EngineTest, AThirtyPercentStepFiresOneAlertAndTheOldLevelResolvesIt) {
  const Series series;
  stable_history(series, 10);
  EXPECT_EQ(count("firing"), 0);

  const auto step = process(series, 10, 1'300'000);
  EXPECT_EQ(step.verdict.kind, detectors::VerdictKind::Regression) << step.verdict.explanation;
  ASSERT_EQ(step.fired.size(), 1u) << step.verdict.explanation;
  EXPECT_TRUE(step.resolved.empty());
  EXPECT_FALSE(step.awaits_confirmation);  // posted runs cannot be rerun
  EXPECT_EQ(count("firing"), 1);

  const auto row = alert(step.fired[0]);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(core::to_string(row->alert.state), "firing");
  EXPECT_EQ(core::to_string(row->alert.kind), "step");
  EXPECT_EQ(core::to_string(row->alert.direction), "regression");
  EXPECT_EQ(row->alert.fired.observed_at, observed(10));
  const json doc = core::to_json(row->alert);
  EXPECT_EQ(doc["state"], "firing");
  EXPECT_EQ(doc["median"], 1'300'000);
  EXPECT_EQ(doc["workload"], "synthetic-engine");
  ASSERT_TRUE(doc.contains("band")) << doc.dump();
  const auto lower = doc["band"]["lower"].get<std::int64_t>();
  const auto upper = doc["band"]["upper"].get<std::int64_t>();
  // The band was learned from the 1 ms history: it holds 1 ms and excludes 1.3 ms.
  EXPECT_LT(lower, 990'000);
  EXPECT_GT(upper, 1'010'000);
  EXPECT_LT(upper, 1'300'000);
  EXPECT_GT(doc["relativeChange"].get<double>(), 0.25);

  // The engine's view agrees with the table.
  const auto status = engine_->status();
  ASSERT_EQ(status.size(), 1u);
  ASSERT_TRUE(status[0].open_alert.has_value());
  EXPECT_EQ(status[0].open_alert->id, step.fired[0]);

  const auto back = process(series, 11, noisy(11));
  EXPECT_TRUE(back.fired.empty());
  ASSERT_EQ(back.resolved, std::vector<core::AlertId>{step.fired[0]});
  const auto resolved = alert(step.fired[0]);
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(core::to_string(resolved->alert.state), "resolved");
  EXPECT_EQ(core::to_json(resolved->alert)["state"], "resolved");
  EXPECT_EQ(resolved->updated_at, arrival(11));
  EXPECT_EQ(count("firing"), 0);
  EXPECT_EQ(count("resolved"), 1);
  EXPECT_FALSE(engine_->status()[0].open_alert.has_value());
}

TEST_F(EngineTest, TheSameRecordTwiceIsADuplicateAndChangesNothing) {
  const Series series;
  stable_history(series, 10);
  const auto r = record(series, 10, 1'300'000);
  const auto first = process(r, arrival(10));
  ASSERT_EQ(first.fired.size(), 1u);
  const auto runs = run_count();
  const auto before = alert(first.fired[0]);

  const auto second = process(r, arrival(10) + 1min);
  EXPECT_TRUE(second.duplicate);
  EXPECT_TRUE(second.fired.empty());
  EXPECT_TRUE(second.resolved.empty());
  EXPECT_FALSE(second.awaits_confirmation);
  EXPECT_EQ(run_count(), runs);
  EXPECT_EQ(count("firing"), 1);
  const auto after = alert(first.fired[0]);
  ASSERT_TRUE(before && after);
  EXPECT_EQ(core::to_string(after->alert.state), core::to_string(before->alert.state));
  EXPECT_EQ(after->updated_at, before->updated_at);
  EXPECT_EQ(core::to_json(after->alert), core::to_json(before->alert));
  // The key's newest run is still the first copy.
  const auto status = engine_->status();
  ASSERT_EQ(status.size(), 1u);
  ASSERT_TRUE(status[0].last_run.has_value());
  EXPECT_EQ(status[0].last_run->observed_at, observed(10));
}

// Runs SQL on the engine's database through a second SQLite connection (another process could).
void sql(const std::filesystem::path& db, const std::string& statement) {
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(other, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(other);
}

// No swallowed error (issue #38): a batch rolled back after the detectors saw it is replayed from
// the store; when that replay fails too, the caller hears both, and the engine judges nothing
// (Unavailable) until a replay succeeds, then goes on where the store is.
TEST_F(EngineTest, AFailedReplayAfterARollbackIsReportedAndNothingIsJudgedUntilOneSucceeds) {
  const Series series;
  stable_history(series, 10);
  ASSERT_FALSE(engine_->out_of_line());
  // The runs table goes away under the engine: the insert fails, and so does the replay.
  sql(dir_ / "kw.db", "ALTER TABLE runs RENAME TO runs_away");
  auto failed = engine_->process(run_of(record(series, 10, noisy(10))), arrival(10));
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("no such table"), std::string::npos)
      << failed.error().message;
  EXPECT_NE(failed.error().message.find("replaying the history to put the detectors back in line "
                                        "with the store failed too"),
            std::string::npos)
      << failed.error().message;
  ASSERT_TRUE(engine_->out_of_line());
  // While the replay keeps failing, a run, a close and an action are refused, saying why.
  auto refused = engine_->process(run_of(record(series, 11, noisy(11))), arrival(11));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, core::ErrorCode::Unavailable);
  EXPECT_NE(refused.error().message.find("not in line with the store"), std::string::npos)
      << refused.error().message;
  const auto closed = engine_->close_cycle(arrival(11));
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code, core::ErrorCode::Unavailable);
  EXPECT_EQ(engine_
                ->acknowledge(core::AlertId("0123456789ab"), core::OperatorAction::Acknowledge,
                              arrival(11))
                .error()
                .code,
            core::ErrorCode::Unavailable);
  // The table is back: the next run replays first, and the rolled-back run is stored when re-sent.
  sql(dir_ / "kw.db", "ALTER TABLE runs_away RENAME TO runs");
  const auto again = process(series, 10, noisy(10));
  EXPECT_FALSE(again.duplicate);
  EXPECT_FALSE(engine_->out_of_line());
  EXPECT_EQ(run_count(), 11);
  // And the detectors are the store's again: a +30% step fires.
  const auto step = process(series, 11, 1'300'000);
  EXPECT_EQ(step.fired.size(), 1u) << step.verdict.explanation;
  EXPECT_EQ(count("firing"), 1);
}

TEST_F(EngineTest, FailedRunsOpenOneFailedAlertPerKeyAndAPassingRunResolvesIt) {
  const Series series;
  stable_history(series, 5);
  std::vector<core::AlertId> fired;
  for (int i = 5; i < 8; ++i) {
    const auto p = process(series, i, 0, "failed");
    EXPECT_FALSE(p.duplicate);
    EXPECT_FALSE(p.awaits_confirmation);
    fired.insert(fired.end(), p.fired.begin(), p.fired.end());
  }
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(count("firing"), 1);
  const auto open = alert(fired[0]);
  ASSERT_TRUE(open.has_value());
  EXPECT_EQ(open->alert.kind, core::AlertKind::Failed);
  EXPECT_EQ(core::to_string(open->alert.state), "firing");
  EXPECT_EQ(open->alert.fired.observed_at, observed(5));  // the first failed run opened it
  EXPECT_EQ(open->alert.explanation, "correctness check failed: max abs error 0.5");
  ASSERT_EQ(engine_->status().size(), 1u);
  ASSERT_TRUE(engine_->status()[0].open_failed_alert.has_value());
  EXPECT_EQ(engine_->status()[0].open_failed_alert->id, fired[0]);
  // Failed runs never alert as steps.
  EXPECT_FALSE(engine_->status()[0].open_alert.has_value());

  const auto good = process(series, 8, noisy(8));
  EXPECT_TRUE(good.fired.empty());
  EXPECT_EQ(good.resolved, std::vector<core::AlertId>{fired[0]});
  const auto closed = alert(fired[0]);
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(core::to_string(closed->alert.state), "resolved");
  EXPECT_EQ(count("firing"), 0);
  EXPECT_FALSE(engine_->status()[0].open_failed_alert.has_value());

  // A later failure opens a new one.
  const auto again = process(series, 9, 0, "failed");
  ASSERT_EQ(again.fired.size(), 1u);
  EXPECT_NE(again.fired[0], fired[0]);
  EXPECT_EQ(count("firing"), 1);
}

TEST_F(EngineTest, AcknowledgeUnknownIsNotFoundFiringIsAcknowledgedClosedIsConflict) {
  const Series series;
  stable_history(series, 10);
  auto unknown = engine_->acknowledge(core::AlertId("no-such-alert"),
                                      core::OperatorAction::Acknowledge, arrival(10));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, core::ErrorCode::NotFound);
  EXPECT_NE(unknown.error().message.find("no-such-alert"), std::string::npos);

  const auto step = process(series, 10, 1'300'000);
  ASSERT_EQ(step.fired.size(), 1u);
  const core::AlertId id = step.fired[0];
  auto acked = engine_->acknowledge(id, core::OperatorAction::Acknowledge, arrival(10) + 1min);
  ASSERT_TRUE(acked) << acked.error().message;
  auto row = alert(id);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(core::to_string(row->alert.state), "acknowledged");
  EXPECT_EQ(core::to_json(row->alert)["state"], "acknowledged");
  EXPECT_EQ(count("firing"), 0);
  auto actions = storage::AlertStore(*store_).actions();
  ASSERT_TRUE(actions);
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_EQ((*actions)[0].alert_id, id);
  EXPECT_EQ((*actions)[0].action, core::OperatorAction::Acknowledge);

  // Back at the old level: an acknowledged alert still resolves.
  const auto back = process(series, 12, noisy(12));
  EXPECT_EQ(back.resolved, std::vector<core::AlertId>{id});
  EXPECT_EQ(core::to_string(alert(id)->alert.state), "resolved");

  auto again = engine_->acknowledge(id, core::OperatorAction::Acknowledge, arrival(12) + 1min);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, core::ErrorCode::Conflict);
  auto rebaseline_closed =
      engine_->acknowledge(id, core::OperatorAction::Rebaseline, arrival(12) + 1min);
  ASSERT_FALSE(rebaseline_closed);
  EXPECT_EQ(rebaseline_closed.error().code, core::ErrorCode::Conflict);
  // Refused actions are not recorded.
  EXPECT_EQ(storage::AlertStore(*store_).actions()->size(), 1u);
}

TEST_F(EngineTest, RebaselineAcceptsTheNewLevel) {
  const Series series;
  stable_history(series, 10);
  const auto step = process(series, 10, 1'300'000);
  ASSERT_EQ(step.fired.size(), 1u);
  const core::AlertId id = step.fired[0];
  auto ok = engine_->acknowledge(id, core::OperatorAction::Rebaseline, arrival(10) + 1min);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(core::to_string(alert(id)->alert.state), "rebaselined");
  EXPECT_EQ(count("firing"), 0);
  EXPECT_FALSE(engine_->status()[0].open_alert.has_value());
  auto actions = storage::AlertStore(*store_).actions();
  ASSERT_TRUE(actions);
  ASSERT_EQ(actions->size(), 1u);
  EXPECT_EQ((*actions)[0].action, core::OperatorAction::Rebaseline);

  // Runs at the new level raise nothing and do not reopen the alert.
  for (int i = 11; i < 20; ++i) {
    const auto p = process(series, i, 1'300'000 + noisy(i) - 1'000'000);
    EXPECT_TRUE(p.fired.empty()) << "run " << i << ": " << p.verdict.explanation;
    EXPECT_TRUE(p.resolved.empty()) << "run " << i;
  }
  EXPECT_EQ(core::to_string(alert(id)->alert.state), "rebaselined");
  EXPECT_EQ(count("firing"), 0);
  auto closed = engine_->acknowledge(id, core::OperatorAction::Acknowledge, arrival(20));
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code, core::ErrorCode::Conflict);
}

// What must survive a restart: the keys, each key's last run and verdict, its open alerts.
void expect_same_status(const std::vector<KeyStatus>& live, const std::vector<KeyStatus>& rebuilt) {
  ASSERT_EQ(live.size(), rebuilt.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    SCOPED_TRACE(live[i].key.display());
    EXPECT_EQ(rebuilt[i].key_id, live[i].key_id);
    EXPECT_EQ(rebuilt[i].key.display(), live[i].key.display());
    ASSERT_EQ(rebuilt[i].last_run.has_value(), live[i].last_run.has_value());
    if (live[i].last_run) {
      EXPECT_EQ(rebuilt[i].last_run->external_id, live[i].last_run->external_id);
      EXPECT_EQ(rebuilt[i].last_run->median, live[i].last_run->median);
    }
    EXPECT_EQ(rebuilt[i].last_verdict.kind, live[i].last_verdict.kind);
    EXPECT_EQ(rebuilt[i].last_verdict.has_band, live[i].last_verdict.has_band);
    EXPECT_EQ(rebuilt[i].last_verdict.band.lower, live[i].last_verdict.band.lower);
    EXPECT_EQ(rebuilt[i].last_verdict.band.upper, live[i].last_verdict.band.upper);
    ASSERT_EQ(rebuilt[i].open_alert.has_value(), live[i].open_alert.has_value());
    if (live[i].open_alert) {
      EXPECT_EQ(rebuilt[i].open_alert->id, live[i].open_alert->id);
      EXPECT_EQ(rebuilt[i].open_alert->state, live[i].open_alert->state);
      EXPECT_EQ(rebuilt[i].open_alert->fired.median, live[i].open_alert->fired.median);
      EXPECT_EQ(rebuilt[i].open_alert->band.lower, live[i].open_alert->band.lower);
      EXPECT_EQ(rebuilt[i].open_alert->band.upper, live[i].open_alert->band.upper);
    }
    ASSERT_EQ(rebuilt[i].open_failed_alert.has_value(), live[i].open_failed_alert.has_value());
    if (live[i].open_failed_alert) {
      EXPECT_EQ(rebuilt[i].open_failed_alert->id, live[i].open_failed_alert->id);
      EXPECT_EQ(rebuilt[i].open_failed_alert->state, live[i].open_failed_alert->state);
    }
  }
}

struct StoredState {
  std::vector<std::tuple<std::string, std::string_view, core::Timestamp, json>> alerts;
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>> outbox;
  std::int64_t runs = 0;
};

StoredState stored_state(storage::Connection& store) {
  StoredState s;
  auto alerts = storage::AlertStore(store).list(std::nullopt, 0);
  EXPECT_TRUE(alerts);
  for (const auto& a : alerts.value_or(std::vector<storage::AlertRow>{}))
    s.alerts.emplace_back(a.alert.id.long_form(), core::to_string(a.alert.state), a.updated_at,
                          core::to_json(a.alert));
  auto counts = storage::Outbox(store).counts();
  EXPECT_TRUE(counts);
  for (const auto& c : counts.value_or(std::vector<storage::OutboxCounts>{}))
    s.outbox.emplace_back(c.destination, c.pending, c.delivered, c.dead);
  s.runs = storage::RunStore(store).run_count().value_or(-1);
  return s;
}

TEST_F(EngineTest, ARebuiltEngineReportsTheSameStatusAndNotifiesNothing) {
  // Key A: a step that fires and is acknowledged, then two runs at the new level.
  const Series a{"engine-test", "posted-a", "synthetic-engine"};
  // Key B: a step that fires and resolves, then failing runs (one open failed alert).
  const Series b{"engine-test", "posted-b", "synthetic-engine"};
  // Key C: stable only.
  const Series c{"engine-test", "posted-c", "synthetic-engine"};
  for (int i = 0; i < 10; ++i) {
    for (const auto* s : {&a, &b, &c}) ASSERT_TRUE(process(*s, i, noisy(i)).fired.empty());
  }
  const auto a_step = process(a, 10, 1'300'000);
  ASSERT_EQ(a_step.fired.size(), 1u);
  ASSERT_TRUE(
      engine_->acknowledge(a_step.fired[0], core::OperatorAction::Acknowledge, arrival(10) + 10s));
  const auto b_step = process(b, 10, 1'250'000);
  ASSERT_EQ(b_step.fired.size(), 1u);
  ASSERT_EQ(process(c, 10, noisy(10)).fired.size(), 0u);
  process(a, 11, 1'302'000);
  process(a, 12, 1'297'000);
  ASSERT_EQ(process(b, 11, noisy(11)).resolved.size(), 1u);
  ASSERT_EQ(process(b, 12, 0, "failed").fired.size(), 1u);
  process(b, 13, 0, "failed");
  process(c, 11, noisy(11));

  const auto live = engine_->status();
  ASSERT_EQ(live.size(), 3u);
  const StoredState before = stored_state(*store_);

  Engine rebuilt(*store_, options_);
  auto ok = rebuilt.rebuild();
  ASSERT_TRUE(ok) << ok.error().message;
  expect_same_status(live, rebuilt.status());
  // Replaying twice gives the same answer again.
  ASSERT_TRUE(rebuilt.rebuild());
  expect_same_status(live, rebuilt.status());

  // Replay wrote nothing: no alert changed, nothing was queued, no run was added.
  const StoredState after = stored_state(*store_);
  EXPECT_EQ(after.alerts, before.alerts);
  EXPECT_EQ(after.outbox, before.outbox);
  EXPECT_EQ(after.runs, before.runs);

  // And the rebuilt engine carries on where the live one stopped: key A resolves on its next run
  // back at the old level, key B's failed alert resolves on a passing run.
  auto a_back = rebuilt.process(run_of(record(a, 13, noisy(13))), arrival(13));
  ASSERT_TRUE(a_back) << a_back.error().message;
  EXPECT_EQ(a_back->resolved, std::vector<core::AlertId>{a_step.fired[0]});
  auto b_good = rebuilt.process(run_of(record(b, 14, noisy(14))), arrival(14));
  ASSERT_TRUE(b_good) << b_good.error().message;
  EXPECT_EQ(b_good->resolved.size(), 1u);
  EXPECT_EQ(count("firing"), 0);
  EXPECT_EQ(count("acknowledged"), 0);
}

// An operator acknowledged a key's failed alert, then the daemon restarted: the alert is still
// the key's open failed alert, so a passing run resolves it and another failure opens no second.
TEST_F(EngineTest, AnAcknowledgedFailedAlertIsStillOpenAfterARebuild) {
  const Series series;
  stable_history(series, 5);
  const auto failed = process(series, 5, 0, "failed");
  ASSERT_EQ(failed.fired.size(), 1u);
  const core::AlertId id = failed.fired[0];
  ASSERT_TRUE(engine_->acknowledge(id, core::OperatorAction::Acknowledge, arrival(5) + 10s));
  EXPECT_EQ(core::to_string(alert(id)->alert.state), "acknowledged");
  const auto live = engine_->status();
  ASSERT_EQ(live.size(), 1u);
  ASSERT_TRUE(live[0].open_failed_alert.has_value());
  EXPECT_EQ(live[0].open_failed_alert->id, id);

  Engine rebuilt(*store_, options_);
  ASSERT_TRUE(rebuilt.rebuild());
  expect_same_status(live, rebuilt.status());

  auto again = rebuilt.process(run_of(record(series, 6, 0, "failed")), arrival(6));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->fired.empty()) << "a second failed alert opened for the same key";
  auto good = rebuilt.process(run_of(record(series, 7, noisy(7))), arrival(7));
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->resolved, std::vector<core::AlertId>{id});
  EXPECT_EQ(core::to_string(alert(id)->alert.state), "resolved");
}

TEST_F(EngineTest, OwnRunsAwaitAConfirmingRerunBeforeTheyFire) {
  const Series own{"kernelwatch", "kernelwatch-fused", "synthetic-engine"};
  options_.confirm_reruns = 1;
  engine_->set_options(options_);
  stable_history(own, 10);

  const auto first = process(own, 10, 1'300'000);
  EXPECT_TRUE(first.awaits_confirmation) << first.verdict.explanation;
  EXPECT_EQ(first.role, detectors::RunRole::Pending);
  EXPECT_EQ(first.verdict.kind, detectors::VerdictKind::Regression);
  EXPECT_TRUE(first.fired.empty());
  EXPECT_EQ(count("firing"), 0);

  const auto rerun = process(own, 11, 1'301'000);
  EXPECT_FALSE(rerun.awaits_confirmation);
  EXPECT_EQ(rerun.role, detectors::RunRole::Confirmed);
  ASSERT_EQ(rerun.fired.size(), 1u) << rerun.verdict.explanation;
  EXPECT_EQ(count("firing"), 1);
  const auto row = alert(rerun.fired[0]);
  ASSERT_TRUE(row.has_value());
  // The alert names the first run at the new level as its onset.
  EXPECT_EQ(row->alert.onset.external_id, record(own, 10, 1'300'000).run.source_native.external_id)
      << core::to_json(row->alert).dump();
}

TEST_F(EngineTest, AnOutlierThatTheRerunDoesNotConfirmFiresNothing) {
  const Series own{"kernelwatch", "kernelwatch-fused", "synthetic-engine"};
  options_.confirm_reruns = 1;
  engine_->set_options(options_);
  stable_history(own, 10);
  EXPECT_TRUE(process(own, 10, 1'300'000).awaits_confirmation);
  const auto rerun = process(own, 11, noisy(11));
  EXPECT_FALSE(rerun.awaits_confirmation);
  EXPECT_TRUE(rerun.fired.empty());
  EXPECT_EQ(count("firing"), 0);
}

TEST_F(EngineTest, OwnRunsFireAtOnceWithoutConfirmReruns) {
  const Series own{"kernelwatch", "kernelwatch-fused", "synthetic-engine"};
  options_.confirm_reruns = 0;
  engine_.emplace(*store_, options_);
  stable_history(own, 10);
  const auto step = process(own, 10, 1'300'000);
  EXPECT_FALSE(step.awaits_confirmation);
  ASSERT_EQ(step.fired.size(), 1u) << step.verdict.explanation;
  EXPECT_EQ(count("firing"), 1);
}

TEST_F(EngineTest, ARunOlderThanTheKeysNewestIsStoredButNotJudged) {
  const Series series;
  stable_history(series, 10);
  const auto runs = run_count();
  const auto before = engine_->status();
  ASSERT_EQ(before.size(), 1u);

  // Observed between runs 2 and 3 (more than the 5-minute clock tolerance before the newest),
  // arriving late, 30% slower: stored, judged by nobody.
  auto late_json = record_json(series, 2, 1'300'000);
  late_json["run"]["spec"]["observedAt"] = core::format_timestamp(observed(2) + 30s);
  late_json["run"]["spec"]["sourceNative"]["externalId"] = "synthetic/forward/late";
  auto late = core::parse_record(late_json);
  ASSERT_TRUE(late) << late.error().message;
  const auto p = process(*late, arrival(10));
  EXPECT_FALSE(p.duplicate);
  EXPECT_TRUE(p.fired.empty());
  EXPECT_TRUE(p.resolved.empty());
  EXPECT_FALSE(p.awaits_confirmation);
  EXPECT_EQ(p.role, detectors::RunRole::Ignored);
  EXPECT_FALSE(p.verdict.breach());
  EXPECT_NE(p.verdict.explanation.find("not judged"), std::string::npos) << p.verdict.explanation;
  EXPECT_EQ(run_count(), runs + 1);
  EXPECT_EQ(count("firing"), 0);

  // The key's newest run and verdict are unchanged.
  const auto after = engine_->status();
  ASSERT_EQ(after.size(), 1u);
  ASSERT_TRUE(after[0].last_run.has_value());
  EXPECT_EQ(after[0].last_run->external_id, before[0].last_run->external_id);
  EXPECT_EQ(after[0].last_verdict.kind, before[0].last_verdict.kind);
}

}  // namespace
}  // namespace kernelwatch::daemon

namespace kernelwatch::daemon {
namespace {

TEST_F(EngineTest, ImportedHistoryWithAStepIsNotReportedAsAnOpenAlert) {
  // Stored by an import, never judged by this daemon: no alert row, nothing owed.
  const Series series;
  {
    auto tx = store_->begin();
    ASSERT_TRUE(tx);
    storage::RunStore runs(*store_);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(runs.insert_run(*tx, record(series, i, noisy(i)), ""));
    ASSERT_TRUE(runs.insert_run(*tx, record(series, 10, 1'300'000), ""));
    ASSERT_TRUE(tx->commit());
  }
  Engine rebuilt(*store_, options_);
  ASSERT_TRUE(rebuilt.rebuild());
  const auto status = rebuilt.status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].last_run->median.count(), 1'300'000);
  EXPECT_FALSE(status[0].open_alert) << status[0].open_alert->id.long_form();
  EXPECT_EQ(count("firing"), 0);
  EXPECT_EQ(*rebuilt.flush_notifications(arrival(11)), 0u);
}

}  // namespace
}  // namespace kernelwatch::daemon

namespace kernelwatch::daemon {
namespace {

TEST_F(EngineTest, AcknowledgingAFailedAlertLeavesTheKeysStepAlertAloneAfterARebuild) {
  const Series series;
  stable_history(series, 10);
  const auto step = process(series, 10, 1'300'000);
  ASSERT_EQ(step.fired.size(), 1u);
  const auto failed = process(series, 11, 0, "failed");
  ASSERT_EQ(failed.fired.size(), 1u);
  ASSERT_TRUE(
      engine_->acknowledge(failed.fired[0], core::OperatorAction::Acknowledge, arrival(11)));
  EXPECT_EQ(core::to_string(alert(failed.fired[0])->alert.state), "acknowledged");
  EXPECT_EQ(core::to_string(alert(step.fired[0])->alert.state), "firing");

  Engine rebuilt(*store_, options_);
  ASSERT_TRUE(rebuilt.rebuild());
  const auto status = rebuilt.status();
  ASSERT_EQ(status.size(), 1u);
  ASSERT_TRUE(status[0].open_alert.has_value());
  EXPECT_EQ(status[0].open_alert->id, step.fired[0]);
  // The replayed acknowledge named the failed alert: the step alert is still firing.
  EXPECT_EQ(status[0].open_alert->state, core::AlertState::Firing);
  ASSERT_TRUE(status[0].open_failed_alert.has_value());
  EXPECT_EQ(status[0].open_failed_alert->id, failed.fired[0]);
}

TEST_F(EngineTest, AReminderIsANewNotificationNotARepeatOfTheFirst) {
  options_.policy.repeat_interval = std::chrono::hours(1);
  engine_.emplace(*store_, options_);
  ASSERT_TRUE(engine_->rebuild());
  const Series series;
  stable_history(series, 10);
  ASSERT_EQ(process(series, 10, 1'300'000).fired.size(), 1u);
  EXPECT_EQ(*engine_->flush_notifications(arrival(10)), 1u);  // one destination: one row
  EXPECT_EQ(*engine_->flush_notifications(arrival(10) + std::chrono::minutes(30)), 0u);
  // Same alert, same run, but a reminder: a new outbox row, not dropped as a duplicate.
  EXPECT_EQ(*engine_->flush_notifications(arrival(10) + std::chrono::hours(2)), 1u);
  auto counts = storage::Outbox(*store_).counts();
  ASSERT_TRUE(counts);
  ASSERT_EQ(counts->size(), 1u);
  EXPECT_EQ(counts->at(0).pending, 2);
}

// The runs are a week old when the alert is first sent; after a restart (a new engine replaying
// the history) the reminder is still due an interval after that notification, and after the
// reminder an interval after the reminder.
TEST_F(EngineTest, ARestartDatesRemindersFromTheStoredNotificationNotFromTheRuns) {
  options_.policy.repeat_interval = std::chrono::hours(1);
  engine_.emplace(*store_, options_);
  ASSERT_TRUE(engine_->rebuild());
  const Series series;
  stable_history(series, 10);
  ASSERT_EQ(process(series, 10, 1'300'000).fired.size(), 1u);
  const core::Timestamp sent = arrival(10) + std::chrono::hours(24 * 7);
  ASSERT_EQ(*engine_->flush_notifications(sent), 1u);
  EXPECT_EQ(engine_->next_reminder().value(), sent + std::chrono::hours(1));

  const auto restart = [&] {
    engine_.emplace(*store_, options_);
    ASSERT_TRUE(engine_->rebuild());
  };
  restart();
  EXPECT_EQ(*engine_->flush_notifications(sent + std::chrono::minutes(59)), 0u);
  restart();
  EXPECT_EQ(*engine_->flush_notifications(sent + std::chrono::hours(1)), 1u);
  EXPECT_EQ(*engine_->flush_notifications(sent + std::chrono::hours(1)), 0u);  // once, not twice
  restart();
  EXPECT_EQ(engine_->next_reminder().value(), sent + std::chrono::hours(2));
  EXPECT_EQ(*engine_->flush_notifications(sent + std::chrono::minutes(119)), 0u);
  EXPECT_EQ(*engine_->flush_notifications(sent + std::chrono::hours(2)), 1u);

  // Acknowledged: no reminder is due any more.
  const auto firing = storage::AlertStore(*store_).list(core::AlertState::Firing, 0);
  ASSERT_TRUE(firing && firing->size() == 1u);
  ASSERT_TRUE(engine_->acknowledge(firing->front().alert.id, core::OperatorAction::Acknowledge,
                                   sent + std::chrono::hours(2)));
  restart();
  EXPECT_EQ(engine_->next_reminder().value(), std::nullopt);
  EXPECT_EQ(*engine_->flush_notifications(sent + std::chrono::hours(30)), 0u);
}

// Whether a run waits for its key's next run is what its source declares in the catalogue
// (runners/sources.hpp), not a list of names in the engine: every registered source's runs do,
// imported and posted ones do not, and none do without confirming reruns.
TEST(ConfirmFor, FollowsTheCatalogueOfRunSources) {
  EngineOptions options;
  options.confirm_reruns = 1;
  for (const runners::RunSource& s : runners::run_sources()) {
    EXPECT_EQ(confirm_for(options, s.source), detectors::ConfirmPolicy::Next) << s.source;
  }
  EXPECT_EQ(confirm_for(options, "liger-kernel-bench"), detectors::ConfirmPolicy::None);
  EXPECT_EQ(confirm_for(options, "engine-test"), detectors::ConfirmPolicy::None);
  options.confirm_reruns = 0;
  EXPECT_EQ(confirm_for(options, "kernelwatch"), detectors::ConfirmPolicy::None);
}

}  // namespace
}  // namespace kernelwatch::daemon
