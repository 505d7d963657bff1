#include "storage/alerts.hpp"

#include <gtest/gtest.h>

#include "storage/run_store.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using nlohmann::json;

core::Timestamp at(long long seconds) {
  return core::Timestamp(std::chrono::seconds(seconds));
}

AlertRow alert(const std::string& id, std::int64_t key_id, const std::string& state,
               long long fired) {
  AlertRow row;
  row.id = id;
  row.key_id = key_id;
  row.kind = "step";
  row.direction = "regression";
  row.state = state;
  row.fired_at = at(fired);
  row.updated_at = at(fired);
  row.document = json{{"id", id}, {"state", state}, {"median", fired}};
  return row;
}

// Alerts refer to a stored key (foreign key), so each test stores one real run first.
class AlertStoreTest : public testing::FreshDatabase {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(FreshDatabase::SetUp());
    alerts_.emplace(*connection_);

    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    auto inserted =
        RunStore(*connection_).insert_run(*tx, testing::fixture_record(testing::kTvdFixture), "");
    ASSERT_TRUE(inserted) << inserted.error().message;
    ASSERT_TRUE(tx->commit());
    key_id_ = inserted->key_id;
  }

  void upsert_all(const std::vector<AlertRow>& rows) {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    for (const auto& r : rows) {
      auto ok = alerts_->upsert(*tx, r);
      ASSERT_TRUE(ok) << ok.error().message;
    }
    ASSERT_TRUE(tx->commit());
  }

  static std::vector<std::string> ids(const std::vector<AlertRow>& rows) {
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(r.id);
    return out;
  }

  std::optional<AlertStore> alerts_;
  std::int64_t key_id_ = 0;
};

TEST_F(AlertStoreTest, AFreshDatabaseIsAtTheCurrentSchemaWithTheAlertTables) {
  EXPECT_EQ(testing::user_version(dir_ / "kw.db"), kSchemaVersion);
  EXPECT_GE(kSchemaVersion, 3);
  const std::string dump = testing::dump_database(dir_ / "kw.db");
  EXPECT_NE(dump.find("table alerts\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("table alert_actions\n"), std::string::npos) << dump;
  // Both tables answer, empty.
  auto all = alerts_->list("", 0);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_TRUE(all->empty());
  auto actions = alerts_->actions();
  ASSERT_TRUE(actions) << actions.error().message;
  EXPECT_TRUE(actions->empty());
}

TEST_F(AlertStoreTest, UpsertInsertsThenUpdatesStateAndDocument) {
  upsert_all({alert("a1", key_id_, "firing", 100)});
  auto found = alerts_->find("a1");
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, "a1");
  EXPECT_EQ((*found)->key_id, key_id_);
  EXPECT_EQ((*found)->kind, "step");
  EXPECT_EQ((*found)->direction, "regression");
  EXPECT_EQ((*found)->state, "firing");
  EXPECT_EQ((*found)->fired_at, at(100));
  EXPECT_EQ((*found)->updated_at, at(100));
  EXPECT_EQ((*found)->document, (json{{"id", "a1"}, {"state", "firing"}, {"median", 100}}));

  AlertRow updated = alert("a1", key_id_, "acknowledged", 100);
  updated.updated_at = at(250);
  updated.document["note"] = "seen";
  upsert_all({updated});
  found = alerts_->find("a1");
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ((*found)->state, "acknowledged");
  EXPECT_EQ((*found)->updated_at, at(250));
  EXPECT_EQ((*found)->fired_at, at(100));
  EXPECT_EQ((*found)->document["note"], "seen");
  EXPECT_EQ((*found)->document["state"], "acknowledged");
  // Still one row.
  auto all = alerts_->list("", 0);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 1u);
}

TEST_F(AlertStoreTest, FindOfAnUnknownIdIsNullopt) {
  upsert_all({alert("a1", key_id_, "firing", 100)});
  auto found = alerts_->find("no-such-alert");
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_FALSE(found->has_value());
}

TEST_F(AlertStoreTest, ListFiltersByStateNewestFirstWithALimit) {
  upsert_all({alert("old", key_id_, "firing", 100), alert("mid", key_id_, "resolved", 200),
              alert("new", key_id_, "firing", 300), alert("newest", key_id_, "firing", 400)});

  auto firing = alerts_->list("firing", 0);
  ASSERT_TRUE(firing) << firing.error().message;
  EXPECT_EQ(ids(*firing), (std::vector<std::string>{"newest", "new", "old"}));

  auto limited = alerts_->list("firing", 2);
  ASSERT_TRUE(limited);
  EXPECT_EQ(ids(*limited), (std::vector<std::string>{"newest", "new"}));

  auto resolved = alerts_->list("resolved", 0);
  ASSERT_TRUE(resolved);
  EXPECT_EQ(ids(*resolved), (std::vector<std::string>{"mid"}));

  auto all = alerts_->list("", 0);
  ASSERT_TRUE(all);
  EXPECT_EQ(ids(*all), (std::vector<std::string>{"newest", "new", "mid", "old"}));

  auto none = alerts_->list("rebaselined", 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(AlertStoreTest, ActionsAreRecordedAndReturnedOldestFirst) {
  upsert_all({alert("a1", key_id_, "firing", 100)});
  {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    // Written out of time order: actions() orders by time.
    ASSERT_TRUE(alerts_->record_action(*tx, {"a1", key_id_, AlertAction::Rebaseline, at(300)}));
    ASSERT_TRUE(alerts_->record_action(*tx, {"a1", key_id_, AlertAction::Acknowledge, at(200)}));
    ASSERT_TRUE(tx->commit());
  }
  auto actions = alerts_->actions();
  ASSERT_TRUE(actions) << actions.error().message;
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[0].alert_id, "a1");
  EXPECT_EQ((*actions)[0].key_id, key_id_);
  EXPECT_EQ((*actions)[0].action, AlertAction::Acknowledge);
  EXPECT_EQ((*actions)[0].at, at(200));
  EXPECT_EQ((*actions)[1].action, AlertAction::Rebaseline);
  EXPECT_EQ((*actions)[1].at, at(300));
}

TEST_F(AlertStoreTest, CountByState) {
  upsert_all({alert("a", key_id_, "firing", 1), alert("b", key_id_, "firing", 2),
              alert("c", key_id_, "resolved", 3)});
  auto firing = alerts_->count_by_state("firing");
  ASSERT_TRUE(firing) << firing.error().message;
  EXPECT_EQ(*firing, 2);
  EXPECT_EQ(alerts_->count_by_state("resolved").value_or(-1), 1);
  EXPECT_EQ(alerts_->count_by_state("acknowledged").value_or(-1), 0);
}

TEST_F(AlertStoreTest, RollingBackTheCallersTransactionDropsTheUpsertAndTheAction) {
  upsert_all({alert("kept", key_id_, "firing", 100)});
  {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(alerts_->upsert(*tx, alert("dropped", key_id_, "firing", 200)));
    ASSERT_TRUE(alerts_->upsert(*tx, alert("kept", key_id_, "resolved", 100)));
    ASSERT_TRUE(alerts_->record_action(*tx, {"kept", key_id_, AlertAction::Acknowledge, at(150)}));
    // Destroyed without commit: rolled back.
  }
  auto dropped = alerts_->find("dropped");
  ASSERT_TRUE(dropped);
  EXPECT_FALSE(dropped->has_value());
  auto kept = alerts_->find("kept");
  ASSERT_TRUE(kept && kept->has_value());
  EXPECT_EQ((*kept)->state, "firing");
  auto actions = alerts_->actions();
  ASSERT_TRUE(actions);
  EXPECT_TRUE(actions->empty());
  EXPECT_EQ(alerts_->count_by_state("firing").value_or(-1), 1);
}

TEST_F(AlertStoreTest, AnUnknownStateIsRefusedByTheSchema) {
  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  EXPECT_FALSE(alerts_->upsert(*tx, alert("x", key_id_, "sleeping", 1)));
}

}  // namespace
}  // namespace kernelwatch::storage
