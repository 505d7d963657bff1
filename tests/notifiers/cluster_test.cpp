// The peers of an Alertmanager cluster through the real worker, outbox and loopback HTTP
// receivers: every peer gets every notification with its own retries, a peer that is down holds
// back no other, a row another peer took is not owed to a peer down longer than the alerts'
// lifetime (no dead letter, no stale replay), and the late peer gets the open alerts by the
// re-send. The wall clock is the test's (it jumps to each retry time); timers are real.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <map>
#include <set>

#include "notifiers/notification.hpp"
#include "notifiers/worker.hpp"
#include "storage/alerts.hpp"
#include "storage/outbox.hpp"
#include "tests/notifiers/support/samples.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::notifiers {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using testing::Action;
using testing::TestReceiver;

// A peer that answers 503 while `down` is set, 200 otherwise.
void script_peer(TestReceiver& receiver, std::shared_ptr<std::atomic<bool>> down) {
  receiver.set_script([down](std::size_t, const testing::RecordedRequest&) {
    return down->load() ? Action::respond(503, "unavailable") : Action::respond(200, "");
  });
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = storage::Connection::open(dir_ / "kw.db", storage::OpenMode::Create);
    ASSERT_TRUE(opened) << opened.error().message;
    store_.emplace(std::move(*opened));
    outbox_.emplace(*store_);
    for (auto& down : down_) {
      down = std::make_shared<std::atomic<bool>>(false);
    }
    for (std::size_t i = 0; i < 3; ++i) script_peer(peers_[i], down_[i]);
  }

  void TearDown() override {
    if (worker_) {
      worker_->stop();
      io_.run_for(std::chrono::seconds(5));
      worker_.reset();
    }
  }

  // Peer i of cluster "am" (am/1 .. am/3), as the config makes them.
  Destination peer(std::size_t i) {
    Destination d;
    d.type = "alertmanager";
    d.cluster = "am";
    d.name = peer_name("am", i + 1);
    d.url = peers_[i].url("/");
    d.timeouts = {milliseconds(500), milliseconds(500), milliseconds(500), milliseconds(500),
                  milliseconds(500)};
    d.backoff = backoff_;
    d.min_interval = milliseconds(0);
    d.resend_interval = std::chrono::seconds(1);  // firing TTL: 4 s
    return d;
  }

  // The notification queued for every peer in one transaction, as the engine does.
  void enqueue_for_all(const Notification& n) {
    auto tx = store_->begin();
    ASSERT_TRUE(tx);
    for (std::size_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(outbox_->enqueue(
          *tx, storage::NewOutboxRow{
                   peer_name("am", i + 1), n.idempotency_key, serialize(n), now_, {}}));
    }
    ASSERT_TRUE(tx->commit());
  }

  void start() {
    WorkerOptions options;
    options.jitter_seed = 7;
    options.host = "gpu-host-1";
    options.on_event = [this](const DeliveryEvent& e) {
      events_.push_back(e);
      if (e.kind == Decision::Kind::RetryAt) now_ = std::max(now_, e.next_attempt_at);
    };
    auto created = DeliveryWorker::create(
        io_, *store_, {peer(0), peer(1), peer(2)}, [this] { return now_; },
        [this](LogLevel, std::string_view message) { logs_.emplace_back(message); }, options);
    ASSERT_TRUE(created) << created.error().message;
    worker_ = std::move(*created);
    worker_->start();
  }

  bool run_until(const std::function<bool()>& done,
                 std::chrono::seconds deadline = std::chrono::seconds(30)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      io_.run_one_for(milliseconds(50));
    }
    return true;
  }

  std::size_t count(Decision::Kind kind, const std::string& destination) const {
    std::size_t n = 0;
    for (const auto& e : events_) n += e.kind == kind && e.destination == destination ? 1 : 0;
    return n;
  }

  storage::OutboxCounts counts_of(const std::string& destination) {
    auto all = outbox_->counts();
    EXPECT_TRUE(all);
    for (const auto& c : *all) {
      if (c.destination == destination) return c;
    }
    return {destination, 0, 0, 0, std::nullopt};
  }

  // The Idempotency-Key headers of the requests a peer answered 2xx.
  std::vector<std::string> accepted_keys(const TestReceiver& receiver) const {
    std::vector<std::string> out;
    for (const auto& r : receiver.snapshot().requests) {
      if (r.answered_status / 100 == 2) out.push_back(r.header("idempotency-key"));
    }
    return out;
  }

  kernelwatch::testing::TempDir dir_;
  std::optional<storage::Connection> store_;
  std::optional<storage::Outbox> outbox_;
  asio::io_context io_;
  TestReceiver peers_[3];
  std::shared_ptr<std::atomic<bool>> down_[3];
  Backoff backoff_{milliseconds(100), milliseconds(400), std::chrono::hours(1)};
  std::unique_ptr<DeliveryWorker> worker_;
  core::Timestamp now_ = testing::at_seconds(testing::kEpoch + 3600);
  std::vector<DeliveryEvent> events_;
  std::vector<std::string> logs_;
};

TEST_F(ClusterTest, EveryPeerGetsTheNotificationAndADownPeerHoldsBackNoOther) {
  down_[2]->store(true);
  enqueue_for_all(testing::sample_notification("cycle-1"));
  start();
  ASSERT_TRUE(run_until([&] {
    return count(Decision::Kind::Delivered, "am/1") == 1 &&
           count(Decision::Kind::Delivered, "am/2") == 1 &&
           count(Decision::Kind::RetryAt, "am/3") >= 3;
  }));
  EXPECT_EQ(accepted_keys(peers_[0]), std::vector<std::string>{"cycle-1"});
  EXPECT_EQ(accepted_keys(peers_[1]), std::vector<std::string>{"cycle-1"});
  // Each peer is posted the same alerts, on its own alerts endpoint.
  const auto first = peers_[0].snapshot().requests.at(0);
  EXPECT_EQ(first.target, "/api/v2/alerts");
  EXPECT_EQ(first.body, peers_[1].snapshot().requests.at(0).body);
  EXPECT_EQ(first.body, peers_[2].snapshot().requests.at(0).body);
  // The down peer retries with its own backoff, and is no dead letter.
  EXPECT_EQ(counts_of("am/3").dead, 0);
  EXPECT_EQ(worker_->stats().dead, 0u);
}

// A peer down longer than the firing TTL (4 re-send intervals): the rows the others took are
// recorded delivered with a note, never dead letters and never replayed to it, and once it
// answers again it gets the open alerts by the re-send: the current state, not stale history.
TEST_F(ClusterTest, ALongDownPeerGetsTheCurrentStateNotTheNotificationsOthersTook) {
  storage::AlertStore alerts(*store_);
  {
    // alert-0 is open and announced; alert-1 fired and resolved while the peer was down.
    auto tx = store_->begin();
    ASSERT_TRUE(tx);
    storage::AlertRow open;
    open.alert = testing::sample_alert(0).alert;
    open.alert.state = core::AlertState::Firing;
    open.updated_at = now_;
    open.notified = Notice::Firing;
    open.notified_at = now_;
    ASSERT_TRUE(alerts.upsert(*tx, open));
    storage::AlertRow closed = open;
    closed.alert = testing::sample_alert(1, Notice::Resolved).alert;
    closed.notified = Notice::Resolved;
    ASSERT_TRUE(alerts.upsert(*tx, closed));
    ASSERT_TRUE(tx->commit());
  }
  down_[2]->store(true);
  Notification firing = testing::sample_notification("cycle-1", 2);
  Notification resolve = testing::sample_notification("cycle-2", 0);
  resolve.alerts.push_back(testing::sample_alert(1, Notice::Resolved));
  enqueue_for_all(firing);
  enqueue_for_all(resolve);
  const auto queued_at = now_;
  start();
  ASSERT_TRUE(run_until([&] { return worker_->stats().covered == 2; }));

  const auto am3 = counts_of("am/3");
  EXPECT_EQ(am3.pending, 0);
  EXPECT_EQ(am3.dead, 0);
  EXPECT_EQ(am3.delivered, 2);
  EXPECT_EQ(worker_->stats().dead, 0u);
  EXPECT_GE(now_ - queued_at, std::chrono::seconds(4)) << "covered before the firing TTL";
  auto rows = outbox_->for_alert(core::AlertId("alert-1"), 0);
  ASSERT_TRUE(rows);
  bool noted = false;
  for (const auto& row : *rows) {
    if (row.destination != "am/3") continue;
    EXPECT_EQ(row.state, storage::OutboxState::Delivered);
    noted = noted || row.last_error.find(
                         "not sent to this peer: peer `am/1` of cluster `am` "
                         "took it") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  EXPECT_TRUE(accepted_keys(peers_[2]).empty());

  // The peer is back: the next re-send brings it the open alert, and only that.
  down_[2]->store(false);
  ASSERT_TRUE(run_until([&] { return !accepted_keys(peers_[2]).empty(); }));
  for (const auto& r : peers_[2].snapshot().requests) {
    if (r.answered_status != 200) continue;
    EXPECT_NE(r.header("idempotency-key").find("gpu-host-1/resend/"), std::string::npos);
    const auto sent = nlohmann::json::parse(r.body);
    ASSERT_EQ(sent.size(), 1u) << r.body;
    EXPECT_EQ(sent[0]["labels"]["alert_id"], "alert-0");
    EXPECT_TRUE(sent[0].contains("startsAt"));  // firing, not a resolve
  }
}

// The whole cluster down: nobody took the notification, so at its maximum age it is a dead
// letter for every peer, as for a single Alertmanager.
TEST_F(ClusterTest, AWholeClusterDownStillDeadLettersAtTheMaximumAge) {
  backoff_.max_age = std::chrono::seconds(2);
  for (auto& down : down_) down->store(true);
  enqueue_for_all(testing::sample_notification("cycle-1"));
  start();
  ASSERT_TRUE(run_until([&] { return worker_->stats().dead == 3; }));
  EXPECT_EQ(worker_->stats().covered, 0u);
  for (const char* name : {"am/1", "am/2", "am/3"}) EXPECT_EQ(counts_of(name).dead, 1) << name;
}

// A maximum age shorter than the firing TTL: the down peer's row is given up, and because
// another peer took it, it is covered rather than dead.
TEST_F(ClusterTest, APeerGivenUpAtTheMaximumAgeIsCoveredWhenAnotherPeerTookIt) {
  backoff_.max_age = milliseconds(1500);
  down_[2]->store(true);
  enqueue_for_all(testing::sample_notification("cycle-1"));
  start();
  ASSERT_TRUE(run_until([&] { return worker_->stats().covered == 1; }));
  EXPECT_EQ(worker_->stats().dead, 0u);
  EXPECT_EQ(counts_of("am/3").dead, 0);
  auto rows = outbox_->for_alert(core::AlertId("alert-0"), 0);
  ASSERT_TRUE(rows);
  for (const auto& row : *rows) {
    if (row.destination == "am/3") {
      EXPECT_NE(row.last_error.find("(gave up after"), std::string::npos) << row.last_error;
    }
  }
}

// A peer that refuses the request (404: a wrong path) is misconfigured, not down: its row is
// a dead letter even though the others took it, so the operator sees it.
TEST_F(ClusterTest, APermanentFailureOfOnePeerIsStillADeadLetter) {
  peers_[2].set_script(
      [](std::size_t, const testing::RecordedRequest&) { return Action::respond(404); });
  enqueue_for_all(testing::sample_notification("cycle-1"));
  start();
  ASSERT_TRUE(run_until([&] { return worker_->stats().dead == 1; }));
  ASSERT_TRUE(run_until([&] { return worker_->stats().delivered == 2; }));
  EXPECT_EQ(counts_of("am/3").dead, 1);
  EXPECT_EQ(worker_->stats().covered, 0u);
}

// Log lines and outcomes name the peer by its destination name and redacted origin only.
TEST_F(ClusterTest, MessagesNameThePeerNeverItsPath) {
  down_[2]->store(true);
  enqueue_for_all(testing::sample_notification("cycle-1"));
  start();
  ASSERT_TRUE(run_until([&] { return worker_->stats().covered == 1; }));
  bool summarised = false;
  for (const auto& line : logs_) {
    EXPECT_EQ(line.find("/api/v2"), std::string::npos) << line;
    summarised =
        summarised || (line.find("destination `am/3` (http://127.0.0.1:") == 0 &&
                       line.find("1 notification(s) not sent to this peer") != std::string::npos);
  }
  EXPECT_TRUE(summarised);
}

}  // namespace
}  // namespace kernelwatch::notifiers
