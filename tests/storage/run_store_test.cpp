#include "storage/run_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/placement.hpp"
#include "storage/detail/queries.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using kernelwatch::testing::fixture;
using kernelwatch::testing::read_file;
using nlohmann::json;
using testing::fixture_record;
using testing::kLayerNormFixture;
using testing::kTvdFixture;

// A copy of the fixture observed `minutes` later with another median.
core::Record shifted(const core::Record& base, int minutes, std::int64_t median_ns) {
  core::Record r = base;
  r.run.observed_at += std::chrono::minutes{minutes};
  r.run.median = std::chrono::nanoseconds{median_ns};
  r.run.source_native.external_id =
      "tvd/backward/torch/nvidia-h100-80gb-hbm3/tokens16384-vocab65536-fp32/" +
      core::format_id_timestamp(r.run.observed_at);
  return r;
}

class RunStoreTest : public testing::FreshDatabase {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(FreshDatabase::SetUp());
    runs_.emplace(*connection_);
  }

  std::optional<RunStore> runs_;
};

TEST_F(RunStoreTest, SameRunIsStoredOnce) {
  const core::Record record = fixture_record(kTvdFixture);
  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  EXPECT_EQ(runs_->insert_run(*tx, record, "")->outcome, InsertOutcome::Inserted);
  EXPECT_EQ(runs_->insert_run(*tx, record, "")->outcome, InsertOutcome::Duplicate);
  // Another name for the same run is still the same run: identity is key + observedAt.
  core::Record renamed = record;
  renamed.run.metadata.name = "renamed";
  EXPECT_EQ(runs_->insert_run(*tx, renamed, "")->outcome, InsertOutcome::Duplicate);
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(*runs_->run_count(), 1);
}

// insert_run answers with the key's id, new run or duplicate, so no caller looks it up again.
TEST_F(RunStoreTest, InsertReturnsTheIdOfTheRunsKey) {
  RunStore& runs = *runs_;
  const core::Record tvd = fixture_record(kTvdFixture);
  const core::Record layer_norm = fixture_record(kLayerNormFixture);
  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  auto first = runs.insert_run(*tx, tvd, "");
  auto later = runs.insert_run(*tx, shifted(tvd, 5, 1234), "");
  auto again = runs.insert_run(*tx, tvd, "");
  auto other = runs.insert_run(*tx, layer_norm, "");
  ASSERT_TRUE(first && later && again && other);
  ASSERT_TRUE(tx->commit());

  auto tvd_key = runs.find_key(core::key_of(tvd)->digest());
  auto layer_norm_key = runs.find_key(core::key_of(layer_norm)->digest());
  ASSERT_TRUE(tvd_key && tvd_key->has_value());
  ASSERT_TRUE(layer_norm_key && layer_norm_key->has_value());
  EXPECT_EQ(first->key_id, **tvd_key);
  EXPECT_EQ(later->key_id, **tvd_key);
  EXPECT_EQ(again->outcome, InsertOutcome::Duplicate);
  EXPECT_EQ(again->key_id, **tvd_key);
  EXPECT_EQ(other->key_id, **layer_norm_key);
  EXPECT_NE(first->key_id, other->key_id);
  auto history = runs.key_history(first->key_id);
  ASSERT_TRUE(history);
  EXPECT_EQ(history->size(), 2u);
}

TEST_F(RunStoreTest, StoredRecordRoundTripsAndAliasesResolve) {
  RunStore& store = *runs_;
  const json original = json::parse(read_file(fixture(kLayerNormFixture)));
  auto tx = connection_->begin();
  ASSERT_TRUE(store.insert_run(*tx, *core::parse_record(original), ""));
  ASSERT_TRUE(tx->commit());
  auto runs = store.runs({});
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(core::to_json(runs->front().record), original);
  EXPECT_EQ(runs->front().implementation_version, "0.6.0");
  EXPECT_EQ(runs->front().key.workload.label, "hidden16384-rows4096-fp32");
  // The fixture's own workload digest is kernelindex's; it is kept as an alias of ours.
  const std::string source_digest = original["run"]["spec"]["workloadDigest"];
  EXPECT_EQ(*store.resolve_alias(source_digest), runs->front().key.workload.digest);
  EXPECT_EQ(*store.resolve_alias("sha256:unknown"), "");
}

TEST_F(RunStoreTest, NewestRunsAreNewestFirstWhateverTheInsertOrder) {
  RunStore& store = *runs_;
  const core::Record base = fixture_record(kTvdFixture);
  std::vector<int> minutes(40);
  for (int i = 0; i < 40; ++i) minutes[static_cast<std::size_t>(i)] = i;
  std::shuffle(minutes.begin(), minutes.end(), std::mt19937(7));
  auto tx = connection_->begin();
  for (int m : minutes) ASSERT_TRUE(store.insert_run(*tx, shifted(base, m, 1000 + m), ""));
  ASSERT_TRUE(tx->commit());

  auto keys = store.keys();
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->size(), 1u);
  EXPECT_EQ(keys->front().run_count, 40);
  auto newest = store.newest_runs(keys->front().id, 5);
  ASSERT_TRUE(newest);
  ASSERT_EQ(newest->size(), 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ((*newest)[static_cast<std::size_t>(i)].record.run.median->count(), 1039 - i);
  auto history = store.key_history(keys->front().id);
  ASSERT_TRUE(history);
  ASSERT_EQ(history->size(), 40u);
  EXPECT_TRUE(std::is_sorted(history->begin(), history->end(), [](const auto& a, const auto& b) {
    return a.record.run.observed_at < b.record.run.observed_at;
  }));
}

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
// A replay reads what it needs of each run from columns filled at insert, and a database of
// schema 4 gets them filled from its stored records when it is opened.
TEST_F(RunStoreTest, AReplayReadsEachRunsFieldsInTimeOrderAlsoAfterMigratingFromVersion4) {
  const core::Record base = fixture_record(kTvdFixture);
  core::Record failed = shifted(base, 10, 0);
  failed.run.status = core::RunStatus::RuntimeError;
  failed.run.median.reset();
  failed.run.status_reason = "CUDA error: out of memory";
  failed.environment.software = json{{"driver", "550.54.15"}};
  {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(runs_->insert_run(*tx, failed, ""));  // newer, inserted first
    ASSERT_TRUE(runs_->insert_run(*tx, base, ""));
    ASSERT_TRUE(tx->commit());
  }
  const auto replay = [](const RunStore& store) {
    std::vector<RunSummary> seen;
    EXPECT_TRUE(store.for_each_in_time_order([&](const RunSummary& run) -> core::Status {
      seen.push_back(run);
      return {};
    }));
    return seen;
  };
  const auto check = [&](const std::vector<RunSummary>& seen) {
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].observed_at, base.run.observed_at);
    EXPECT_EQ(seen[0].external_id, base.run.source_native.external_id);
    EXPECT_EQ(seen[0].implementation_digest, base.run.implementation_digest);
    EXPECT_EQ(seen[0].source, base.run.source_native.source);
    EXPECT_EQ(seen[0].software, base.environment.software);
    EXPECT_EQ(seen[1].status, core::RunStatus::RuntimeError);
    EXPECT_FALSE(seen[1].median);
    EXPECT_EQ(seen[1].status_reason, "CUDA error: out of memory");
    EXPECT_EQ(seen[1].software, (json{{"driver", "550.54.15"}}));
  };
  ASSERT_FALSE(base.run.implementation_digest.empty());
  ASSERT_FALSE(base.run.source_native.source.empty());
  check(replay(*runs_));

  // The same file as schema 4 wrote it: no replay columns, no time index (and no alert origin,
  // schema 6's, nor run_status, schema 7's, nor run judgements, schema 8's).
  runs_.reset();
  connection_.reset();
  const auto path = dir_ / "kw.db";
  testing::downgrade_runs_to_v7(path);
  testing::exec_sql(
      path,
      "DROP INDEX runs_by_time; ALTER TABLE runs DROP COLUMN implementation_digest; "
      "ALTER TABLE runs DROP COLUMN software; ALTER TABLE runs DROP COLUMN "
      "status_reason; ALTER TABLE runs DROP COLUMN source; "
      "ALTER TABLE alerts DROP COLUMN origin; ALTER TABLE runs DROP COLUMN run_status; "
      "PRAGMA user_version = 4;");
  auto reopened = Connection::open(path, OpenMode::Existing);
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_EQ(testing::user_version(path), kSchemaVersion);
  check(replay(RunStore(*reopened)));
}
#endif

// Where each run ran (its host and GPU labels) comes from its run template, read once per
// template: the labels of its GPUs' templates read as they were written, whatever characters they
// hold (an escaped quote or backslash, non-ASCII), and the runs of one GPU share one placement.
TEST_F(RunStoreTest, AReplayReadsWhereEachRunRanFromItsTemplateAndSharesItPerGpu) {
  const core::Record base = fixture_record(kTvdFixture);
  const std::vector<core::Placement> gpus = {
      {"h100-a", "0", "GPU-8c3a0000-0000-0000-0000-000000000000", "00000000:19:00.0"},
      {"h100-a", "1", "GPU-8c3a0000-0000-0000-0000-000000000001", "00000000:1A:00.0"},
      {"h100-b", "2", "GPU-\\x-\u00e9t\u00e9", ""},  // a backslash (escaped), non-ASCII
      {"h\"\u00f6st", "3", "", "00000000:1C:00.0"},  // a quote (escaped), no UUID
  };
  {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    int minutes = 0;
    for (int round = 0; round < 2; ++round) {
      for (const auto& gpu : gpus) {
        ++minutes;
        core::Record run = shifted(base, minutes, 1000 + minutes);
        core::set_placement(run.run.metadata, gpu);
        ASSERT_TRUE(runs_->insert_run(*tx, run, ""));
      }
    }
    ASSERT_TRUE(tx->commit());
  }
  std::vector<core::SharedPlacement> seen;
  ASSERT_TRUE(runs_->for_each_in_time_order([&](const RunSummary& run) -> core::Status {
    seen.push_back(run.placement);
    return {};
  }));
  ASSERT_EQ(seen.size(), 2 * gpus.size());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const core::Placement& want = gpus[i % gpus.size()];
    EXPECT_EQ(seen[i]->host, want.host) << i;
    EXPECT_EQ(seen[i]->gpu, want.gpu) << i;
    EXPECT_EQ(seen[i]->gpu_uuid, want.gpu_uuid) << i;
    EXPECT_EQ(seen[i]->pci_bus_id, want.pci_bus_id) << i;
    EXPECT_EQ(seen[i].address(), seen[i % gpus.size()].address()) << i;
  }
  EXPECT_NE(seen[0].address(), seen[1].address());
}

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
TEST_F(RunStoreTest, NewestRunsQueryWalksTheIndexWithoutScanOrSort) {
  const auto path = dir_ / "kw.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = std::string("EXPLAIN QUERY PLAN ") + queries::kNewestRunIds;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  std::string plan;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    plan += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
    plan += "\n";
  }
  sqlite3_finalize(stmt);
  sqlite3_close_v2(db);
  EXPECT_NE(plan.find("SEARCH runs USING COVERING INDEX"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("SCAN"), std::string::npos) << plan;
}
#endif

// A host's seeds and controls (other hosts' runs it started a key from, or read around a step)
// are never read as its own runs by a fleet: the newest passed runs of a key leave them out, and
// they are never unsettled.
TEST_F(RunStoreTest, NewestPassedRunsLeaveOutTheSeedsThisHostTookFromOthers) {
  const core::Record base = fixture_record(kTvdFixture);
  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  std::int64_t key = 0;
  for (int minutes : {0, 10, 20, 30, 40}) {
    key = runs_->insert_run(*tx, shifted(base, minutes, 1'000'000 + minutes), "")->key_id;
  }
  const auto at = [&](int minutes) { return base.run.observed_at + std::chrono::minutes{minutes}; };
  ASSERT_TRUE(runs_->record_judgement(*tx, key, at(20), Judgement::seed(at(20))));
  ASSERT_TRUE(runs_->record_judgement(*tx, key, at(30), Judgement{Confirmation::Alone, at(30), 7}));
  ASSERT_TRUE(runs_->record_judgement(*tx, key, at(40), Judgement::control(at(50))));
  ASSERT_TRUE(tx->commit());
  const auto newest = runs_->newest_passed_runs(key, at(60), 10);
  ASSERT_TRUE(newest) << newest.error().message;
  std::vector<std::int64_t> medians;
  for (const auto& run : *newest) medians.push_back(run.record.run.median->count());
  EXPECT_EQ(medians, (std::vector<std::int64_t>{1'000'030, 1'000'010, 1'000'000}));
  // The overview counts and draws this host's runs only.
  const auto recent = runs_->recent_medians(10);
  ASSERT_TRUE(recent) << recent.error().message;
  EXPECT_EQ(recent->at(key).runs, 3);
  EXPECT_EQ(recent->at(key).medians_ns,
            (std::vector<std::int64_t>{1'000'000, 1'000'010, 1'000'030}));
  // The judged run at minute 30 waits for its cycle to close; the seed and the control were
  // never judged here.
  const auto summaries = runs_->key_summaries(key);
  ASSERT_TRUE(summaries) << summaries.error().message;
  std::map<std::int64_t, Judged> judged;
  for (const auto& run : *summaries) {
    judged[(run.observed_at - base.run.observed_at) / std::chrono::minutes{1}] = run.judged;
  }
  EXPECT_EQ(judged, (std::map<std::int64_t, Judged>{{0, Judged::Never},
                                                    {10, Judged::Never},
                                                    {20, Judged::Never},
                                                    {30, Judged::CycleOpen},
                                                    {40, Judged::Never}}));
}

}  // namespace
}  // namespace kernelwatch::storage
