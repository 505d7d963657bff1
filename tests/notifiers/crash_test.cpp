// The outbox survives SIGKILL: a real delivery process is killed while the receiver is down,
// restarted, and every notification arrives; a repeat carries the same idempotency key.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>

#include "notifiers/notification.hpp"
#include "storage/outbox.hpp"
#include "tests/notifiers/support/samples.hpp"
#include "tests/notifiers/support/spawn.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::notifiers {
namespace {

using testing::Action;

constexpr int kNotifications = 300;
constexpr std::size_t kUpBeforeOutage = 120;

TEST(CrashTest, SigkillDuringAnOutageLosesNothing) {
  kernelwatch::testing::TempDir dir;
  const auto db = dir / "kw.db";
  {
    auto store = storage::Connection::open(db, storage::OpenMode::Create);
    ASSERT_TRUE(store) << store.error().message;
    storage::Outbox outbox(*store);
    auto tx = store->begin();
    ASSERT_TRUE(tx);
    for (int i = 0; i < kNotifications; ++i) {
      auto n = testing::sample_notification("cycle-" + std::to_string(i), 1);
      n.alerts[0].alert.id = core::AlertId("alert-" + std::to_string(i));
      // Created now: the worker runs on the real clock, and a notification older than the
      // destination's max_age would be given up at its first failure instead of retried.
      n.created_at =
          std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
      ASSERT_TRUE(outbox.enqueue(
          *tx, storage::NewOutboxRow{"hook", n.idempotency_key, serialize(n), n.created_at, {}}));
    }
    ASSERT_TRUE(tx->commit());
  }

  testing::TestReceiver receiver;
  std::atomic<bool> down{false};
  receiver.set_script([&](std::size_t index, const auto&) {
    if (index >= kUpBeforeOutage) down = true;
    return down ? Action::respond(503, "down") : Action::respond(200);
  });
  const std::vector<std::string> args = {
      "--db",      db.string(),    "--type",   "webhook", "--name",       "hook",
      "--url",     receiver.url(), "--secret", "s3cret",  "--batch",      "16",
      "--base-ms", "20",           "--cap-ms", "60",      "--timeout-ms", "2000"};
  const auto log = dir / "worker.log";
  const pid_t first = testing::spawn(KW_OUTBOX_WORKER, args, log);
  // Down, and the worker has been retrying against it for a few rounds.
  ASSERT_TRUE(receiver.wait_for_requests(kUpBeforeOutage + 5))
      << kernelwatch::testing::read_file(log);
  testing::kill_hard(first);

  {
    auto store = storage::Connection::open(db, storage::OpenMode::Existing);
    ASSERT_TRUE(store);
    auto counts = storage::Outbox(*store).counts();
    ASSERT_TRUE(counts);
    EXPECT_GT(counts->at(0).pending, 0);
    EXPECT_LE(counts->at(0).delivered, static_cast<std::int64_t>(kUpBeforeOutage));
  }

  receiver.set_script([](std::size_t, const auto&) { return Action::respond(200); });
  const pid_t second = testing::spawn(KW_OUTBOX_WORKER, args, log);
  const auto exit_code = testing::wait_exit(second, std::chrono::seconds(60));
  ASSERT_EQ(exit_code, std::optional<int>(0)) << kernelwatch::testing::read_file(log);

  // Every notification arrived with a 2xx; each one always under the same key.
  std::map<std::string, std::set<std::string>> keys_by_alert;
  std::set<std::string> delivered;
  std::size_t repeats = 0;
  for (const auto& r : receiver.snapshot().requests) {
    const auto body = nlohmann::json::parse(r.body);
    const std::string key = r.header("idempotency-key");
    EXPECT_EQ(body["idempotencyKey"], key);
    keys_by_alert[body["alerts"][0]["id"]].insert(key);
    if (r.answered_status == 200 && !delivered.insert(key).second) ++repeats;
  }
  EXPECT_EQ(delivered.size(), static_cast<std::size_t>(kNotifications));
  for (const auto& [alert, keys] : keys_by_alert) EXPECT_EQ(keys.size(), 1u) << alert;
  // At least once, and the repeats are bounded by one unrecorded batch.
  EXPECT_LE(repeats, 16u);

  auto store = storage::Connection::open(db, storage::OpenMode::Existing);
  ASSERT_TRUE(store);
  auto counts = storage::Outbox(*store).counts();
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->at(0).delivered, kNotifications);
  EXPECT_EQ(counts->at(0).pending, 0);
  EXPECT_EQ(counts->at(0).dead, 0);
}

}  // namespace
}  // namespace kernelwatch::notifiers
