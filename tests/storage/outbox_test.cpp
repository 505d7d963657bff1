#include "storage/outbox.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "storage/detail/schema.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

core::Timestamp at(long long seconds) {
  return core::Timestamp(std::chrono::seconds(seconds));
}

NewOutboxRow row(const std::string& destination, const std::string& key, long long created) {
  return NewOutboxRow{destination, key, "{\"k\":\"" + key + "\"}", at(created), std::nullopt};
}

#if !KW_STORAGE_ON_POSTGRESQL
// EXPLAIN QUERY PLAN details, one per line.
std::string query_plan(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string plan;
  if (sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &stmt, nullptr) ==
      SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      plan += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
      plan += "\n";
    }
  } else {
    plan = sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  sqlite3_close_v2(db);
  return plan;
}
#endif

class OutboxTest : public testing::FreshDatabase {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(FreshDatabase::SetUp());
    outbox_.emplace(*connection_);
  }

  void enqueue_all(const std::vector<NewOutboxRow>& rows) {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    for (const auto& r : rows) {
      auto outcome = outbox_->enqueue(*tx, r);
      ASSERT_TRUE(outcome) << outcome.error().message;
    }
    ASSERT_TRUE(tx->commit());
  }

  std::optional<Outbox> outbox_;
};

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
TEST_F(OutboxTest, AFreshDatabaseHasTheOutboxSinceSchemaVersionTwo) {
  EXPECT_EQ(testing::user_version(dir_ / "kw.db"), kSchemaVersion);
  EXPECT_GE(kSchemaVersion, 2);
}
#endif

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
TEST(OutboxMigration, UpgradesAVersionOneDatabaseInPlace) {
  kernelwatch::testing::TempDir dir;
  const auto path = dir / "v1.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(
        sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
        SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, migrations()[0].sql, nullptr, nullptr, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 1", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close_v2(db);
  }
  auto connection = Connection::open(path, OpenMode::Existing);
  ASSERT_TRUE(connection) << connection.error().message;
  EXPECT_EQ(testing::user_version(path), kSchemaVersion);  // every later migration applied
  Outbox outbox(*connection);
  auto tx = connection->begin();
  ASSERT_TRUE(tx);
  ASSERT_TRUE(outbox.enqueue(*tx, row("hook", "k", 1)));
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(outbox.counts()->at(0).pending, 1);
}
#endif

TEST_F(OutboxTest, EnqueueIsPartOfTheCallersTransaction) {
  {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(outbox_->enqueue(*tx, row("slack", "k1", 100)));
    // No commit: the destructor rolls back, and the notification goes with it.
  }
  auto due = outbox_->claim_due("slack", at(1000), 10);
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->empty());

  enqueue_all({row("slack", "k1", 100)});
  due = outbox_->claim_due("slack", at(1000), 10);
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].idempotency_key, "k1");
  EXPECT_EQ((*due)[0].payload, "{\"k\":\"k1\"}");
  EXPECT_EQ((*due)[0].state, OutboxState::Pending);
  EXPECT_EQ((*due)[0].attempts, 0);
}

TEST_F(OutboxTest, TheSameKeyForTheSameDestinationIsStoredOnce) {
  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  EXPECT_EQ(*outbox_->enqueue(*tx, row("slack", "k1", 100)), EnqueueOutcome::Inserted);
  EXPECT_EQ(*outbox_->enqueue(*tx, row("slack", "k1", 200)), EnqueueOutcome::Duplicate);
  EXPECT_EQ(*outbox_->enqueue(*tx, row("hook", "k1", 100)), EnqueueOutcome::Inserted);
  ASSERT_TRUE(tx->commit());
  auto counts = outbox_->counts();
  ASSERT_TRUE(counts);
  ASSERT_EQ(counts->size(), 2u);
  EXPECT_EQ((*counts)[0].destination, "hook");
  EXPECT_EQ((*counts)[1].pending, 1);
}

TEST_F(OutboxTest, RejectsRowsWithoutDestinationOrKey) {
  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  auto outcome = outbox_->enqueue(*tx, row("", "k", 1));
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, core::ErrorCode::InvalidArgument);
}

TEST_F(OutboxTest, ClaimsOnlyDueRowsOfOneDestinationInQueueOrder) {
  NewOutboxRow later = row("slack", "later", 100);
  later.not_before = at(500);
  enqueue_all({row("slack", "b", 120), row("slack", "a", 110), row("hook", "x", 100), later});
  auto due = outbox_->claim_due("slack", at(200), 10);
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].idempotency_key, "b");
  EXPECT_EQ((*due)[1].idempotency_key, "a");
  auto limited = outbox_->claim_due("slack", at(1000), 2);
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->size(), 2u);
  auto next = outbox_->next_due("slack");
  ASSERT_TRUE(next);
  EXPECT_EQ(**next, at(110));
  auto none = outbox_->next_due("nobody");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
}

TEST_F(OutboxTest, RetryMovesTheNextAttemptAndKeepsTheError) {
  enqueue_all({row("hook", "k", 100)});
  const auto id = (*outbox_->claim_due("hook", at(100), 1))[0].id;
  ASSERT_TRUE(outbox_->mark_retry(id, at(160), "HTTP 503"));
  EXPECT_TRUE(outbox_->claim_due("hook", at(159), 10)->empty());
  auto due = outbox_->claim_due("hook", at(160), 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].attempts, 1);
  EXPECT_EQ((*due)[0].last_error, "HTTP 503");
  EXPECT_EQ((*due)[0].next_attempt_at, at(160));
}

TEST_F(OutboxTest, DeliveredRowsAreNeverClaimedAgain) {
  enqueue_all({row("hook", "k", 100)});
  const auto id = (*outbox_->claim_due("hook", at(100), 1))[0].id;
  ASSERT_TRUE(outbox_->mark_delivered(id, at(101)));
  EXPECT_TRUE(outbox_->claim_due("hook", at(10'000), 10)->empty());
  auto found = outbox_->find(id);
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->state, OutboxState::Delivered);
  EXPECT_EQ((*found)->finished_at, at(101));
  // A second mark of a finished row is refused.
  auto again = outbox_->mark_retry(id, at(200), "late");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, core::ErrorCode::NotFound);
}

TEST_F(OutboxTest, DeadLettersKeepTheReasonAndAreListedNewestFirst) {
  enqueue_all({row("slack", "a", 100), row("slack", "b", 101), row("slack", "c", 102)});
  auto due = *outbox_->claim_due("slack", at(200), 10);
  ASSERT_TRUE(outbox_->mark_dead(due[0].id, at(300), "permanent failure: HTTP 404 no_service"));
  ASSERT_TRUE(
      outbox_->mark_dead(due[1].id, at(400), "permanent failure: HTTP 400 invalid_payload"));
  auto dead = outbox_->dead_letters(0);
  ASSERT_TRUE(dead);
  ASSERT_EQ(dead->size(), 2u);
  EXPECT_EQ((*dead)[0].idempotency_key, "b");
  EXPECT_EQ((*dead)[0].last_error, "permanent failure: HTTP 400 invalid_payload");
  EXPECT_EQ((*dead)[1].state, OutboxState::Dead);
  EXPECT_EQ(outbox_->dead_letters(1)->size(), 1u);
  auto counts = *outbox_->counts();
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].pending, 1);
  EXPECT_EQ(counts[0].dead, 2);
  EXPECT_EQ(counts[0].delivered, 0);
  EXPECT_EQ(counts[0].oldest_pending, at(102));
}

TEST_F(OutboxTest, RecordsABatchOfOutcomesInOneTransaction) {
  enqueue_all({row("hook", "a", 100), row("hook", "b", 101), row("hook", "c", 102)});
  auto due = *outbox_->claim_due("hook", at(200), 10);
  std::vector<OutboxUpdate> updates = {
      {due[0].id, OutboxUpdate::Kind::Delivered, at(201), ""},
      {due[1].id, OutboxUpdate::Kind::Dead, at(202), "permanent failure: HTTP 410"},
      {due[2].id, OutboxUpdate::Kind::RetryAt, at(260), "HTTP 500"},
      {due[0].id, OutboxUpdate::Kind::Delivered, at(203), ""},  // already done: ignored
  };
  ASSERT_TRUE(outbox_->record(updates));
  auto counts = *outbox_->counts();
  EXPECT_EQ(counts[0].delivered, 1);
  EXPECT_EQ(counts[0].dead, 1);
  EXPECT_EQ(counts[0].pending, 1);
  EXPECT_EQ(**outbox_->next_due("hook"), at(260));
}

TEST_F(OutboxTest, SurvivesReopeningTheDatabase) {
  enqueue_all({row("hook", "a", 100)});
  const auto id = (*outbox_->claim_due("hook", at(100), 1))[0].id;
  ASSERT_TRUE(outbox_->mark_retry(id, at(150), "connect failed"));
  outbox_.reset();
  connection_.reset();
  auto reopened = Connection::open(location(), OpenMode::Existing);
  ASSERT_TRUE(reopened);
  Outbox outbox(*reopened);
  auto due = outbox.claim_due("hook", at(150), 10);
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].attempts, 1);
  EXPECT_EQ((*due)[0].last_error, "connect failed");
}

TEST_F(OutboxTest, PrunesOnlyOldDeliveredRows) {
  enqueue_all({row("hook", "a", 100), row("hook", "b", 101)});
  auto due = *outbox_->claim_due("hook", at(200), 10);
  ASSERT_TRUE(outbox_->mark_delivered(due[0].id, at(300)));
  ASSERT_TRUE(outbox_->mark_dead(due[1].id, at(300), "gone"));
  EXPECT_EQ(*outbox_->prune_delivered(at(300)), 0);
  EXPECT_EQ(*outbox_->prune_delivered(at(301)), 1);
  auto counts = *outbox_->counts();
  EXPECT_EQ(counts[0].delivered, 0);
  EXPECT_EQ(counts[0].dead, 1);
}

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
TEST_F(OutboxTest, DueQueryUsesThePartialIndex) {
  const auto plan = query_plan(dir_ / "kw.db",
                               "SELECT id FROM outbox INDEXED BY outbox_due WHERE state = "
                               "'pending' AND destination = 'x' AND "
                               "next_attempt_at_ns <= 5 ORDER BY id LIMIT 10");
  EXPECT_NE(plan.find("outbox_due"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
  const auto next = query_plan(dir_ / "kw.db",
                               "SELECT next_attempt_at_ns FROM outbox WHERE state = 'pending' AND "
                               "destination = 'x' ORDER BY next_attempt_at_ns LIMIT 1");
  EXPECT_NE(next.find("outbox_next"), std::string::npos) << next;
}

}  // namespace
}  // namespace kernelwatch::storage

namespace kernelwatch::storage {
namespace {
#endif

TEST_F(OutboxTest, RowsOfRemovedDestinationsBecomeDeadLettersWithTheReason) {
  enqueue_all({row("kept", "k1", 100), row("gone", "k2", 100), row("gone", "k3", 101)});
  auto abandoned = outbox_->abandon_destinations_except({"kept", "with \"quote\""}, at(200));
  ASSERT_TRUE(abandoned) << abandoned.error().message;
  EXPECT_EQ(*abandoned, 2);
  auto counts = outbox_->counts();
  ASSERT_TRUE(counts);
  ASSERT_EQ(counts->size(), 2u);
  EXPECT_EQ(counts->at(0).destination, "gone");
  EXPECT_EQ(counts->at(0).dead, 2);
  EXPECT_EQ(counts->at(0).pending, 0);
  EXPECT_EQ(counts->at(1).pending, 1);
  auto dead = outbox_->dead_letters(10);
  ASSERT_TRUE(dead);
  ASSERT_EQ(dead->size(), 2u);
  EXPECT_EQ(dead->at(0).last_error, "destination removed from the configuration");
  // Nothing configured at all: every pending row goes.
  EXPECT_EQ(*outbox_->abandon_destinations_except({}, at(300)), 1);
}

}  // namespace
}  // namespace kernelwatch::storage
