// A restart's replay judges every run as the live daemon did (issue #25): posted batches closed
// where the daemon closed them, a run dated minutes ahead that must not stop the next one from
// being judged, and an incident acknowledged through the API that stays so after a restart.
// Real SQLite file, the real Engine; no process.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/run.hpp"
#include "core/time.hpp"
#include "daemon/engine.hpp"
#include "storage/alerts.hpp"
#include "storage/run_store.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::daemon {
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

// A posted run of `provider` on workload `workload`, observed at `at`.
core::Record posted(const std::string& provider, const std::string& workload, core::Timestamp at,
                    std::int64_t median_ns) {
  const json hardware = {{"vendor", "nvidia"},
                         {"product", "NVIDIA H100"},
                         {"formFactor", "80GB HBM3"},
                         {"architecture", "sm_90"}};
  const json doc = {
      {"run",
       {{"apiVersion", "kernelindex.dev/v1alpha1"},
        {"kind", "BenchmarkRun"},
        {"spec",
         {{"status", "passed"},
          {"observedAt", core::format_timestamp(at)},
          {"timing", {{"latencyNs", {{"median", median_ns}}}, {"primaryStatistic", "median"}}},
          {"measurements", json::array({{{"metric", "latency"},
                                         {"statistic", "p20"},
                                         {"unit", "ns"},
                                         {"value", median_ns - median_ns / 2000}},
                                        {{"metric", "latency"},
                                         {"statistic", "p80"},
                                         {"unit", "ns"},
                                         {"value", median_ns + median_ns / 2000}}})},
          {"sourceNative",
           {{"source", "replay-test"},
            {"benchmark", "synthetic/forward"},
            {"externalId", "synthetic/forward/" + provider + "/" + workload + "/" +
                               core::format_id_timestamp(at)}}}}},
        {"metadata", {{"labels", {{"provider", provider}, {"workload", workload}}}}}}},
      {"protocol",
       {{"apiVersion", "kernelindex.dev/v1alpha1"},
        {"kind", "BenchmarkProtocol"},
        {"spec", {{"harness", {{"name", "replay-test"}}}, {"measurement", {{"timer", "e"}}}}},
        {"metadata", {{"name", "replay-test-protocol"}}}}},
      {"environment",
       {{"apiVersion", "kernelindex.dev/v1alpha1"},
        {"kind", "ExecutionEnvironment"},
        {"spec", {{"hardware", hardware}, {"software", json::object()}}}}}};
  auto parsed = core::parse_record(doc);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? *parsed : core::Record{};
}

std::int64_t noisy(int i) {
  return 1'000'000 + (i % 3) * 4'000;
}

class EngineReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = storage::Connection::open(dir_ / "kw.db", storage::OpenMode::Create);
    ASSERT_TRUE(opened) << opened.error().message;
    store_.emplace(std::move(*opened));
    engine_.emplace(*store_, options_);
    ASSERT_TRUE(engine_->rebuild());
  }

  // One posted batch: stored and judged together, then its cycle closed (what POST does).
  CycleClose batch(const std::vector<core::Record>& records, core::Timestamp now) {
    auto runs = core::runs_of(records);
    EXPECT_TRUE(runs) << runs.error().message;
    auto processed = engine_->process_batch(runs ? *runs : std::vector<core::Run>{}, now);
    EXPECT_TRUE(processed) << processed.error().message;
    auto closed = engine_->close_cycle(now);
    EXPECT_TRUE(closed) << closed.error().message;
    return closed ? *closed : CycleClose{};
  }

  // Every stored alert row (id, state, document) and the open alert of every key.
  std::vector<std::string> picture(Engine& engine) {
    std::vector<std::string> out;
    auto rows = storage::AlertStore(*store_).list(std::nullopt, 0);
    EXPECT_TRUE(rows);
    for (const auto& row : rows.value_or(std::vector<storage::AlertRow>{})) {
      out.push_back(row.alert.id.long_form() + " " + std::string(core::to_string(row.alert.state)) +
                    " " + std::string(storage::to_string(row.origin)));
    }
    for (const auto& key : engine.status()) {
      out.push_back(key.key.display() + ": " + std::string(core::to_string(key.standing.state)) +
                    " " + (key.open_alert ? key.open_alert->id.long_form() : "-"));
    }
    return out;
  }

  kernelwatch::testing::TempDir dir_;
  std::optional<storage::Connection> store_;
  EngineOptions options_;
  std::optional<Engine> engine_;
};

// A subject steps in one posted batch (its own alert: nothing else moved), its reference ten
// minutes later in another: within one hour, so a replay that closed cycles only at gaps would
// make both one incident. The replay closes where the daemon closed: the same alerts, no
// `history` rows added, the same key states.
TEST_F(EngineReplayTest, ARestartJudgesPostedBatchesAsTheDaemonDid) {
  const core::Timestamp t0 = base_time();
  for (int i = 0; i < 10; ++i) {
    (void)batch({posted("liger", "w", t0 + std::chrono::minutes(i), noisy(i)),
                 posted("torch", "w", t0 + std::chrono::minutes(i) + 10s, 2 * noisy(i))},
                t0 + std::chrono::minutes(i) + 30s);
  }
  const auto step_at = t0 + 2h;
  const auto subject = batch({posted("liger", "w", step_at, 1'300'000)}, step_at + 30s);
  ASSERT_EQ(subject.fired.size(), 1u);
  ASSERT_TRUE(subject.incidents.empty());
  const auto reference =
      batch({posted("torch", "w", step_at + 10min, 2'600'000)}, step_at + 10min + 30s);
  ASSERT_EQ(reference.fired.size() + reference.incidents.size(), 1u);

  const auto live = picture(*engine_);
  Engine restarted(*store_, options_);
  ASSERT_TRUE(restarted.rebuild());
  EXPECT_EQ(picture(restarted), live);
  for (const auto& line : picture(restarted)) EXPECT_EQ(line.find(" history"), std::string::npos);
}

// A run dated four minutes ahead (inside the 5-minute clock tolerance), then one dated now and
// 1.5x slower: the second is judged just after the first, fires, and a restart agrees.
TEST_F(EngineReplayTest, ARunDatedMinutesAheadDoesNotStopTheNextFromBeingJudged) {
  const core::Timestamp t0 = base_time();
  for (int i = 0; i < 10; ++i) {
    (void)batch({posted("posted", "w", t0 + std::chrono::minutes(i), noisy(i))},
                t0 + std::chrono::minutes(i) + 30s);
  }
  const auto now = t0 + 20min;
  (void)batch({posted("posted", "w", now + 4min, noisy(10))}, now);
  const auto slow = batch({posted("posted", "w", now, 1'500'000)}, now + 30s);
  ASSERT_EQ(slow.fired.size(), 1u);
  EXPECT_EQ(slow.fired[0].direction, core::Direction::Regression);

  const auto live = picture(*engine_);
  Engine restarted(*store_, options_);
  ASSERT_TRUE(restarted.rebuild());
  EXPECT_EQ(picture(restarted), live);
}

// Acknowledging an incident acknowledges its members; the keys show it, and so does a restart.
TEST_F(EngineReplayTest, AnAcknowledgedIncidentStaysAcknowledgedWithItsMembersAfterARestart) {
  const core::Timestamp t0 = base_time();
  const std::vector<std::string> workloads = {"a", "b", "c", "d", "e"};
  for (int i = 0; i < 10; ++i) {
    std::vector<core::Record> records;
    for (const auto& w : workloads)
      records.push_back(posted("liger", w, t0 + std::chrono::minutes(i), noisy(i)));
    (void)batch(records, t0 + std::chrono::minutes(i) + 30s);
  }
  std::vector<core::Record> stepped;
  for (const auto& w : workloads) stepped.push_back(posted("liger", w, t0 + 2h, 1'200'000));
  const auto closed = batch(stepped, t0 + 2h + 30s);
  ASSERT_TRUE(closed.fired.empty());
  ASSERT_EQ(closed.incidents.size(), 1u);
  const core::AlertId incident = closed.incidents[0].id;
  EXPECT_EQ(closed.incidents[0].members.size(), 5u);
  for (const auto& key : engine_->status()) {
    EXPECT_EQ(key.standing.state, core::KeyState::Incident) << key.key.display();
  }

  ASSERT_TRUE(engine_->acknowledge(incident, core::OperatorAction::Acknowledge, t0 + 3h));
  const auto row = storage::AlertStore(*store_).find(incident);
  ASSERT_TRUE(row && *row);
  EXPECT_EQ((*row)->alert.state, core::AlertState::Acknowledged);
  for (const auto& member : (*row)->alert.members) {
    EXPECT_EQ(member.state, core::AlertState::Acknowledged);
  }
  for (const auto& key : engine_->status()) {
    EXPECT_EQ(key.standing.state, core::KeyState::Acknowledged) << key.key.display();
  }
  const auto live = picture(*engine_);
  Engine restarted(*store_, options_);
  ASSERT_TRUE(restarted.rebuild());
  EXPECT_EQ(picture(restarted), live);
}

}  // namespace
}  // namespace kernelwatch::daemon
