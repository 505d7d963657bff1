#include "storage/alerts.hpp"

#include <gtest/gtest.h>

#include <sqlite3.h>

#include "storage/detail/schema.hpp"
#include "storage/run_store.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using nlohmann::json;

core::Timestamp at(long long seconds) {
  return core::Timestamp(std::chrono::seconds(seconds));
}

AlertRow alert(const std::string& id, std::int64_t key_id, core::AlertState state,
               long long fired) {
  AlertRow row;
  row.alert.id = core::AlertId(id);
  row.alert.key = {"tvd/backward",
                   "torch",
                   "tokens16384-vocab65536-fp32",
                   "nvidia-h100-80gb-hbm3",
                   "liger-bench-do-bench-backward",
                   "sha256:key"};
  row.alert.state = state;
  row.alert.fired = {"run/" + std::to_string(fired), at(fired), std::chrono::nanoseconds(fired)};
  row.alert.onset = row.alert.fired;
  row.key_id = key_id;
  row.updated_at = at(fired);
  return row;
}

constexpr auto Firing = core::AlertState::Firing;
constexpr auto Resolved = core::AlertState::Resolved;
constexpr auto Acknowledged = core::AlertState::Acknowledged;
constexpr auto Rebaselined = core::AlertState::Rebaselined;

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
    for (const auto& r : rows) out.push_back(r.alert.id.long_form());
    return out;
  }

  std::optional<AlertStore> alerts_;
  std::int64_t key_id_ = 0;
};

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
TEST_F(AlertStoreTest, AFreshDatabaseIsAtTheCurrentSchemaWithTheAlertTables) {
  EXPECT_EQ(testing::user_version(dir_ / "kw.db"), kSchemaVersion);
  EXPECT_GE(kSchemaVersion, 3);
  const std::string dump = testing::dump_database(dir_ / "kw.db");
  EXPECT_NE(dump.find("table alerts\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("table alert_actions\n"), std::string::npos) << dump;
  // Both tables answer, empty.
  auto all = alerts_->list(std::nullopt, 0);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_TRUE(all->empty());
  auto actions = alerts_->actions();
  ASSERT_TRUE(actions) << actions.error().message;
  EXPECT_TRUE(actions->empty());
}
#endif

TEST_F(AlertStoreTest, UpsertInsertsThenUpdatesStateAndDocument) {
  AlertRow first = alert("a1", key_id_, Firing, 100);
  first.alert.band = {std::chrono::nanoseconds(90), std::chrono::nanoseconds(110),
                      std::chrono::nanoseconds(100)};
  first.alert.attribution = {{"implementation.version", "0.6.1", "0.6.2"}};
  upsert_all({first});
  auto found = alerts_->find(core::AlertId("a1"));
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->key_id, std::optional<std::int64_t>(key_id_));
  EXPECT_EQ((*found)->updated_at, at(100));
  EXPECT_EQ((*found)->notified, std::nullopt);
  EXPECT_EQ((*found)->notified_at, std::nullopt);
  // The whole alert comes back as it went in.
  EXPECT_EQ(core::to_json((*found)->alert), core::to_json(first.alert));

  AlertRow updated = first;
  updated.alert.state = Acknowledged;
  updated.alert.explanation = "seen";
  updated.updated_at = at(250);
  upsert_all({updated});
  found = alerts_->find(core::AlertId("a1"));
  ASSERT_TRUE(found && found->has_value());
  EXPECT_EQ((*found)->alert.state, Acknowledged);
  EXPECT_EQ((*found)->alert.explanation, "seen");
  EXPECT_EQ((*found)->alert.fired.observed_at, at(100));
  EXPECT_EQ((*found)->updated_at, at(250));
  // Still one row.
  auto all = alerts_->list(std::nullopt, 0);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 1u);
}

// An environment incident has no key of its own, only members.
TEST_F(AlertStoreTest, AnIncidentWithoutAKeyKeepsItsMembers) {
  AlertRow incident =
      alert("nvidia-h100-80gb-hbm3@2025-07-17T18:00:00.000Z/regression", 0, Rebaselined, 100);
  incident.key_id.reset();
  incident.alert.kind = core::AlertKind::Environment;
  incident.alert.key = {"", "", "", "nvidia-h100-80gb-hbm3", "", ""};
  incident.alert.incident = incident.alert.id;
  core::Alert member = alert("member", key_id_, Firing, 90).alert;
  member.kind = core::AlertKind::Environment;
  member.incident = incident.alert.id;
  incident.alert.members = {member};
  upsert_all({incident});
  const auto found = alerts_->find(incident.alert.id);
  ASSERT_TRUE(found && found->has_value()) << (found ? "" : found.error().message);
  EXPECT_EQ((*found)->key_id, std::nullopt);
  ASSERT_EQ((*found)->alert.members.size(), 1u);
  EXPECT_EQ((*found)->alert.members[0].key.provider, "torch");
  EXPECT_EQ(core::to_json((*found)->alert), core::to_json(incident.alert));
}

// What to notify is read from the rows: never announced, resolved but announced only as firing,
// or firing and last announced before the reminder cutoff.
TEST_F(AlertStoreTest, NotificationCandidatesFollowWhatWasLastNotified) {
  AlertRow fresh = alert("fresh", key_id_, Firing, 100);
  AlertRow announced = alert("announced", key_id_, Firing, 200);
  announced.notified = core::Notice::Firing;
  announced.notified_at = at(1000);
  AlertRow stale = alert("stale", key_id_, Firing, 300);
  stale.notified = core::Notice::Firing;
  stale.notified_at = at(500);
  AlertRow resolved = alert("resolved", key_id_, Resolved, 400);
  resolved.notified = core::Notice::Firing;
  resolved.notified_at = at(1000);
  AlertRow done = alert("done", key_id_, Resolved, 500);
  done.notified = core::Notice::Resolved;
  done.notified_at = at(1000);
  upsert_all({fresh, announced, stale, resolved, done});

  auto due = alerts_->notification_candidates(at(600));
  ASSERT_TRUE(due) << due.error().message;
  EXPECT_EQ(ids(*due), (std::vector<std::string>{"fresh", "stale", "resolved"}));
  EXPECT_EQ(alerts_->oldest_firing_notification().value(), std::optional<core::Timestamp>(at(500)));

  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  ASSERT_TRUE(alerts_->mark_notified(*tx, core::AlertId("fresh"), core::Notice::Firing, at(700)));
  ASSERT_TRUE(alerts_->mark_notified(*tx, core::AlertId("stale"), core::Notice::Firing, at(700)));
  ASSERT_TRUE(
      alerts_->mark_notified(*tx, core::AlertId("resolved"), core::Notice::Resolved, at(700)));
  ASSERT_TRUE(tx->commit());
  due = alerts_->notification_candidates(at(600));
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->empty()) << ids(*due).size();
  const auto row = alerts_->find(core::AlertId("fresh"));
  ASSERT_TRUE(row && row->has_value());
  EXPECT_EQ((*row)->notified, std::optional<core::Notice>(core::Notice::Firing));
  EXPECT_EQ((*row)->notified_at, std::optional<core::Timestamp>(at(700)));
  EXPECT_EQ(alerts_->oldest_firing_notification().value(), std::optional<core::Timestamp>(at(700)));
}

// An alert of imported history is listed like any other but never owes a notification, and an
// update (a live run resolving it) keeps its origin; remove_history never removes the daemon's.
TEST_F(AlertStoreTest, HistorysAlertsOweNoNotificationAndKeepTheirOrigin) {
  AlertRow old = alert("history-firing", key_id_, Firing, 100);
  old.origin = AlertOrigin::History;
  AlertRow ours = alert("daemon-firing", key_id_, Firing, 200);
  upsert_all({old, ours});
  auto due = alerts_->notification_candidates(at(600));
  ASSERT_TRUE(due) << due.error().message;
  EXPECT_EQ(ids(*due), (std::vector<std::string>{"daemon-firing"}));

  AlertRow resolved = alert("history-firing", key_id_, Resolved, 100);  // origin left default
  upsert_all({resolved});
  const auto row = alerts_->find(core::AlertId("history-firing")).value();
  ASSERT_TRUE(row);
  EXPECT_EQ(row->origin, AlertOrigin::History);
  EXPECT_EQ(row->alert.state, Resolved);
  due = alerts_->notification_candidates(at(600));
  ASSERT_TRUE(due);
  EXPECT_EQ(ids(*due), (std::vector<std::string>{"daemon-firing"}));

  auto tx = connection_->begin();
  ASSERT_TRUE(tx);
  ASSERT_TRUE(alerts_->remove_history(*tx, core::AlertId("daemon-firing")));
  ASSERT_TRUE(alerts_->remove_history(*tx, core::AlertId("history-firing")));
  ASSERT_TRUE(tx->commit());
  EXPECT_TRUE(alerts_->find(core::AlertId("daemon-firing")).value());
  EXPECT_FALSE(alerts_->find(core::AlertId("history-firing")).value());
}

TEST_F(AlertStoreTest, FindOfAnUnknownIdIsNullopt) {
  upsert_all({alert("a1", key_id_, Firing, 100)});
  auto found = alerts_->find(core::AlertId("no-such-alert"));
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_FALSE(found->has_value());
}

TEST_F(AlertStoreTest, ListFiltersByStateNewestFirstWithALimit) {
  upsert_all({alert("old", key_id_, Firing, 100), alert("mid", key_id_, Resolved, 200),
              alert("new", key_id_, Firing, 300), alert("newest", key_id_, Firing, 400)});

  auto firing = alerts_->list(Firing, 0);
  ASSERT_TRUE(firing) << firing.error().message;
  EXPECT_EQ(ids(*firing), (std::vector<std::string>{"newest", "new", "old"}));

  auto limited = alerts_->list(Firing, 2);
  ASSERT_TRUE(limited);
  EXPECT_EQ(ids(*limited), (std::vector<std::string>{"newest", "new"}));

  auto resolved = alerts_->list(Resolved, 0);
  ASSERT_TRUE(resolved);
  EXPECT_EQ(ids(*resolved), (std::vector<std::string>{"mid"}));

  auto all = alerts_->list(std::nullopt, 0);
  ASSERT_TRUE(all);
  EXPECT_EQ(ids(*all), (std::vector<std::string>{"newest", "new", "mid", "old"}));

  auto none = alerts_->list(Rebaselined, 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(AlertStoreTest, ActionsAreRecordedAndReturnedOldestFirst) {
  upsert_all({alert("a1", key_id_, Firing, 100)});
  {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    // Written out of time order: actions() orders by time.
    ASSERT_TRUE(alerts_->record_action(
        *tx, {core::AlertId("a1"), key_id_, core::OperatorAction::Rebaseline, at(300)}));
    ASSERT_TRUE(alerts_->record_action(
        *tx, {core::AlertId("a1"), key_id_, core::OperatorAction::Acknowledge, at(200)}));
    ASSERT_TRUE(tx->commit());
  }
  auto actions = alerts_->actions();
  ASSERT_TRUE(actions) << actions.error().message;
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[0].alert_id.long_form(), "a1");
  EXPECT_EQ((*actions)[0].key_id, key_id_);
  EXPECT_EQ((*actions)[0].action, core::OperatorAction::Acknowledge);
  EXPECT_EQ((*actions)[0].at, at(200));
  EXPECT_EQ((*actions)[1].action, core::OperatorAction::Rebaseline);
  EXPECT_EQ((*actions)[1].at, at(300));
}

TEST_F(AlertStoreTest, CountByState) {
  upsert_all({alert("a", key_id_, Firing, 1), alert("b", key_id_, Firing, 2),
              alert("c", key_id_, Resolved, 3)});
  auto firing = alerts_->count_by_state(Firing);
  ASSERT_TRUE(firing) << firing.error().message;
  EXPECT_EQ(*firing, 2);
  EXPECT_EQ(alerts_->count_by_state(Resolved).value_or(-1), 1);
  EXPECT_EQ(alerts_->count_by_state(Acknowledged).value_or(-1), 0);
}

TEST_F(AlertStoreTest, RollingBackTheCallersTransactionDropsTheUpsertAndTheAction) {
  upsert_all({alert("kept", key_id_, Firing, 100)});
  {
    auto tx = connection_->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(alerts_->upsert(*tx, alert("dropped", key_id_, Firing, 200)));
    ASSERT_TRUE(alerts_->upsert(*tx, alert("kept", key_id_, Resolved, 100)));
    ASSERT_TRUE(alerts_->record_action(
        *tx, {core::AlertId("kept"), key_id_, core::OperatorAction::Acknowledge, at(150)}));
    // Destroyed without commit: rolled back.
  }
  auto dropped = alerts_->find(core::AlertId("dropped"));
  ASSERT_TRUE(dropped);
  EXPECT_FALSE(dropped->has_value());
  auto kept = alerts_->find(core::AlertId("kept"));
  ASSERT_TRUE(kept && kept->has_value());
  EXPECT_EQ((*kept)->alert.state, Firing);
  auto actions = alerts_->actions();
  ASSERT_TRUE(actions);
  EXPECT_TRUE(actions->empty());
  EXPECT_EQ(alerts_->count_by_state(Firing).value_or(-1), 1);
}

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
TEST_F(AlertStoreTest, AnUnknownStateIsRefusedByTheSchemaAndAnUnreadableRowNamesItself) {
  upsert_all({alert("a1", key_id_, Firing, 1)});
  connection_.reset();
  const auto path = dir_ / "kw.db";
  // The schema refuses a state outside the lifecycle ...
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    EXPECT_NE(sqlite3_exec(db, "UPDATE alerts SET state = 'sleeping' WHERE id = 'a1'", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close_v2(db);
  }
  // ... and a row whose document cannot be read is an error that names the row.
  testing::exec_sql(path, "UPDATE alerts SET document = '{\"id\": 5}' WHERE id = 'a1'");
  auto connection = Connection::open(path, OpenMode::Existing);
  ASSERT_TRUE(connection);
  const auto found = AlertStore(*connection).find(core::AlertId("a1"));
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().message.find("alert a1"), std::string::npos) << found.error().message;
}
#endif

#if !KW_STORAGE_ON_POSTGRESQL  // reads the SQLite file itself
// A kernelwatch 0.1 database (schema 3): what an alert owed stays owed, the rest counts as
// announced in its state.
TEST(AlertStoreMigration, Version3RowsKeepWhatTheyOwedAndTheRestCountsAsAnnounced) {
  kernelwatch::testing::TempDir dir;
  const auto path = dir / "kw.db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(
        sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
        SQLITE_OK);
    for (int v = 0; v < 3; ++v) {
      ASSERT_EQ(sqlite3_exec(db, migrations()[v].sql, nullptr, nullptr, nullptr), SQLITE_OK) << v;
    }
    const std::string insert =
        "INSERT INTO workloads VALUES (1, 'w', 'w', '{}'); "
        "INSERT INTO environments VALUES (1, 'e', 'e', '{}'); "
        "INSERT INTO protocols VALUES (1, 'p', 'p', '{}'); "
        "INSERT INTO keys VALUES (1, 'k', 'b', 'bd', 'pr', 'pd', 1, 1, 1); "
        "INSERT INTO alerts VALUES ('told', 1, 'step', 'regression', 'firing', 10, 20, "
        "'{\"id\":\"told\",\"benchmark\":\"b\",\"provider\":\"pr\",\"workload\":\"w\","
        "\"environment\":\"e\",\"kind\":\"step\",\"direction\":\"regression\","
        "\"state\":\"firing\",\"externalId\":\"r1\","
        "\"observedAt\":\"2025-07-17T18:18:16Z\",\"median\":5}', NULL); "
        "INSERT INTO alerts VALUES ('owed', 1, 'step', 'regression', 'resolved', 11, 21, "
        "'{\"id\":\"owed\",\"benchmark\":\"b\",\"provider\":\"pr\",\"workload\":\"w\","
        "\"environment\":\"e\",\"kind\":\"step\",\"direction\":\"regression\","
        "\"state\":\"resolved\",\"externalId\":\"r2\","
        "\"observedAt\":\"2025-07-17T18:18:16Z\",\"median\":5}', '[{}]'); "
        "PRAGMA user_version = 3;";
    ASSERT_EQ(sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close_v2(db);
  }
  auto connection = Connection::open(path, OpenMode::Existing);
  ASSERT_TRUE(connection) << connection.error().message;
  EXPECT_EQ(testing::user_version(path), kSchemaVersion);
  AlertStore alerts(*connection);
  const auto told = alerts.find(core::AlertId("told")).value();
  ASSERT_TRUE(told);
  EXPECT_EQ(told->notified, std::optional<core::Notice>(core::Notice::Firing));
  EXPECT_EQ(told->notified_at,
            std::optional<core::Timestamp>(core::Timestamp(std::chrono::nanoseconds(20))));
  const auto owed = alerts.find(core::AlertId("owed")).value();
  ASSERT_TRUE(owed);
  EXPECT_EQ(owed->notified, std::optional<core::Notice>(core::Notice::Firing));  // resolve owed
  const auto due = alerts.notification_candidates(core::Timestamp(std::chrono::nanoseconds(0)));
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ(due->front().alert.id.long_form(), "owed");
}
#endif

}  // namespace
}  // namespace kernelwatch::storage
