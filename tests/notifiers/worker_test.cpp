#include "notifiers/worker.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <set>

#include "notifiers/notification.hpp"
#include "storage/alerts.hpp"
#include "storage/outbox.hpp"
#include "tests/notifiers/support/samples.hpp"
#include "tests/notifiers/support/test_pki.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::notifiers {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using testing::Action;
using testing::TestReceiver;

const testing::TestPki& pki() {
  static const testing::TestPki instance = testing::make_test_pki();
  return instance;
}

// A fake wall clock the test moves: after a RetryAt the test jumps it to the retry time, so
// retry schedules are checked exactly and nothing waits for real backoff.
class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = storage::Connection::open(dir_ / "kw.db", storage::OpenMode::Create);
    ASSERT_TRUE(opened) << opened.error().message;
    store_.emplace(std::move(*opened));
    outbox_.emplace(*store_);
    testing::write_text(dir_ / "ca.pem", pki().ca_pem);
  }

  void TearDown() override {
    if (worker_) {
      worker_->stop();
      io_.run_for(std::chrono::seconds(5));
      worker_.reset();
    }
  }

  Destination destination(std::string_view type, const std::string& name, const std::string& url) {
    Destination d;
    d.type = type;
    d.name = name;
    d.url = url;
    d.ca_file = (dir_ / "ca.pem").string();
    d.timeouts = {milliseconds(500), milliseconds(500), milliseconds(500), milliseconds(500),
                  milliseconds(500)};
    d.backoff = {milliseconds(100), milliseconds(400), std::chrono::hours(1)};
    d.min_interval = milliseconds(0);
    return d;
  }

  void enqueue(const std::string& destination, const Notification& n) {
    auto tx = store_->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(outbox_->enqueue(
        *tx, storage::NewOutboxRow{destination, n.idempotency_key, serialize(n), now_, {}}));
    ASSERT_TRUE(tx->commit());
  }

  void start(std::vector<Destination> destinations, WorkerOptions options = {}) {
    options.jitter_seed = 99;
    options.on_event = [this](const DeliveryEvent& e) {
      events_.push_back(e);
      if (e.kind == Decision::Kind::RetryAt && advance_on_retry_) now_ = e.next_attempt_at;
    };
    auto created = DeliveryWorker::create(
        io_, *store_, std::move(destinations), [this] { return now_; },
        [this](LogLevel, std::string_view message) { logs_.emplace_back(message); },
        std::move(options));
    ASSERT_TRUE(created) << created.error().message;
    worker_ = std::move(*created);
    worker_->start();
  }

  // Runs the io_context until `done` or a generous deadline; false on the deadline.
  bool run_until(const std::function<bool()>& done,
                 std::chrono::seconds deadline = std::chrono::seconds(20)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      io_.run_one_for(milliseconds(50));
    }
    return true;
  }

  std::size_t count(Decision::Kind kind, const std::string& destination = "") const {
    std::size_t n = 0;
    for (const auto& e : events_) {
      if (e.kind == kind && (destination.empty() || e.destination == destination)) ++n;
    }
    return n;
  }

  kernelwatch::testing::TempDir dir_;
  std::optional<storage::Connection> store_;
  std::optional<storage::Outbox> outbox_;
  asio::io_context io_;
  std::unique_ptr<DeliveryWorker> worker_;
  core::Timestamp now_ = testing::at_seconds(testing::kEpoch + 3600);
  bool advance_on_retry_ = true;
  std::vector<DeliveryEvent> events_;
  std::vector<std::string> logs_;
};

TEST_F(WorkerTest, RetriesFiveHundredsWithSeededBackoffThenDelivers) {
  TestReceiver receiver;
  receiver.set_script(testing::fail_then_succeed(3, 500));
  enqueue("hook", testing::sample_notification("cycle-1"));
  const auto start_time = now_;
  start({destination("webhook", "hook", receiver.url("/hook?token=s3cret"))});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));

  ASSERT_EQ(events_.size(), 4u);
  // The schedule is the seeded backoff, exactly: 100, 200, 400 ms before jitter.
  std::mt19937_64 rng(99);
  const Backoff backoff{milliseconds(100), milliseconds(400), std::chrono::hours(1)};
  auto expected = start_time;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(events_[i].kind, Decision::Kind::RetryAt);
    EXPECT_EQ(events_[i].message, "HTTP 500");
    expected += backoff_delay(backoff, i + 1, rng);
    EXPECT_EQ(events_[i].next_attempt_at, expected) << i;
  }
  const auto seen = receiver.snapshot();
  ASSERT_EQ(seen.requests.size(), 4u);
  for (const auto& r : seen.requests) EXPECT_EQ(r.header("idempotency-key"), "cycle-1");
  ASSERT_TRUE(run_until([&] { return outbox_->counts()->at(0).delivered == 1; }));
  EXPECT_EQ(outbox_->counts()->at(0).pending, 0);
  for (const auto& line : logs_) EXPECT_EQ(line.find("s3cret"), std::string::npos) << line;
  EXPECT_NE(logs_.at(0).find("http://127.0.0.1:"), std::string::npos) << logs_.at(0);
}

TEST_F(WorkerTest, HonoursRetryAfterInSecondsAndAsAnHttpDate) {
  TestReceiver receiver;
  const auto date_target = now_ + std::chrono::seconds(1) + std::chrono::seconds(120);
  receiver.set_script([&](std::size_t index, const auto&) {
    if (index == 0) {
      Action a = Action::respond(429, "slow down");
      a.headers.emplace_back("Retry-After", "1");
      return a;
    }
    if (index == 1) {
      Action a = Action::respond(503, "maintenance");
      // Wed, 21 Oct 2015 07:28:00 GMT style, two minutes after the fake clock's next value.
      const auto t = std::chrono::floor<std::chrono::seconds>(date_target);
      const auto day = std::chrono::floor<std::chrono::days>(t);
      const std::chrono::year_month_day ymd(day);
      const std::chrono::hh_mm_ss hms(t - day);
      static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
      static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%s, %02u %s %d %02ld:%02ld:%02lld GMT",
                    kDays[std::chrono::weekday(day).c_encoding()], static_cast<unsigned>(ymd.day()),
                    kMonths[static_cast<unsigned>(ymd.month()) - 1], static_cast<int>(ymd.year()),
                    static_cast<long>(hms.hours().count()),
                    static_cast<long>(hms.minutes().count()),
                    static_cast<long long>(hms.seconds().count()));
      a.headers.emplace_back("Retry-After", buffer);
      return a;
    }
    return Action::respond(200);
  });
  now_ = std::chrono::floor<std::chrono::seconds>(now_);
  enqueue("hook", testing::sample_notification("cycle-ra"));
  const auto t0 = now_;
  start({destination("webhook", "hook", receiver.url())});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));
  ASSERT_EQ(events_.size(), 3u);
  EXPECT_EQ(events_[0].message, "HTTP 429");
  EXPECT_EQ(events_[0].next_attempt_at, t0 + std::chrono::seconds(1));
  EXPECT_EQ(events_[1].message, "HTTP 503");
  EXPECT_EQ(events_[1].next_attempt_at, date_target);
}

TEST_F(WorkerTest, PermanentFailuresAreDeadLetteredOnceWithTheReason) {
  TestReceiver webhook;
  webhook.set_script([](std::size_t, const auto&) { return Action::respond(404, "no such hook"); });
  TestReceiver slack;
  slack.set_script(
      [](std::size_t, const auto&) { return Action::respond(400, "invalid_payload"); });
  enqueue("hook", testing::sample_notification("a"));
  enqueue("slack", testing::sample_notification("b"));
  start(
      {destination("webhook", "hook", webhook.url()), destination("slack", "slack", slack.url())});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Dead) == 2; }));
  EXPECT_EQ(count(Decision::Kind::RetryAt), 0u);
  EXPECT_EQ(webhook.snapshot().requests.size(), 1u);
  EXPECT_EQ(slack.snapshot().requests.size(), 1u);
  auto dead = outbox_->dead_letters(0);
  ASSERT_TRUE(dead);
  ASSERT_EQ(dead->size(), 2u);
  std::set<std::string> reasons;
  for (const auto& row : *dead) reasons.insert(row.last_error);
  EXPECT_TRUE(reasons.count("permanent failure: HTTP 404"));
  EXPECT_TRUE(reasons.count("permanent failure: HTTP 400 invalid_payload"));
}

TEST_F(WorkerTest, GivesUpAtTheMaximumAgeWithoutARetryStorm) {
  TestReceiver receiver;
  receiver.set_script([](std::size_t, const auto&) { return Action::respond(502, "bad gateway"); });
  for (int i = 0; i < 5; ++i)
    enqueue("hook", testing::sample_notification("k" + std::to_string(i)));
  auto d = destination("webhook", "hook", receiver.url());
  d.backoff = {milliseconds(100), milliseconds(400), std::chrono::seconds(2)};
  start({d});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Dead) == 5; }));
  // While the destination fails, only the head row probes it, once per (growing) backoff
  // period; the rows behind it wait their turn instead of each retrying on its own schedule.
  std::vector<std::int64_t> order;
  for (const auto& e : events_) order.push_back(e.row_id);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end())) << "rows retried interleaved";
  EXPECT_GE(std::count(order.begin(), order.end(), order.front()), 4);
  EXPECT_EQ(receiver.snapshot().requests.size(), events_.size());
  const auto dead = outbox_->dead_letters(0);
  ASSERT_TRUE(dead);
  for (const auto& row : *dead) {
    EXPECT_NE(row.last_error.find("maximum age"), std::string::npos) << row.last_error;
  }
}

TEST_F(WorkerTest, OneHangingDestinationDoesNotHoldUpAnother) {
  TestReceiver stuck;
  stuck.set_script([](std::size_t, const auto&) { return Action::hang(); });
  TestReceiver healthy;
  for (int i = 0; i < 3; ++i) {
    enqueue("stuck", testing::sample_notification("s" + std::to_string(i)));
    enqueue("healthy", testing::sample_notification("h" + std::to_string(i)));
  }
  auto slow = destination("webhook", "stuck", stuck.url());
  slow.timeouts.read = std::chrono::minutes(5);
  start({slow, destination("webhook", "healthy", healthy.url())});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered, "healthy") == 3; }));
  EXPECT_TRUE(stuck.wait_for_requests(1));
  EXPECT_EQ(count(Decision::Kind::RetryAt, "stuck") + count(Decision::Kind::Delivered, "stuck"),
            0u);
}

TEST_F(WorkerTest, SignedGroupedWebhookOverHttpsVerifiesAtTheReceiver) {
  TestReceiver receiver(testing::ServerIdentity{pki().server.cert_pem, pki().server.key_pem});
  Notification n = testing::sample_notification("cycle-signed", 3);
  enqueue("hook", n);
  auto d = destination("webhook", "hook", receiver.url("/kw"));
  d.secret = "correct horse battery staple";
  start({d});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));
  const auto requests = receiver.snapshot().requests;
  ASSERT_EQ(requests.size(), 1u);  // three alerts, one message
  const auto& r = requests[0];
  EXPECT_EQ(verify_webhook_signature(d.secret, r.header("x-kernelwatch-timestamp"),
                                     r.header("x-kernelwatch-signature"), r.body, now_,
                                     std::chrono::minutes(5)),
            SignatureCheck::Valid);
  EXPECT_EQ(verify_webhook_signature("forged", r.header("x-kernelwatch-timestamp"),
                                     r.header("x-kernelwatch-signature"), r.body, now_,
                                     std::chrono::minutes(5)),
            SignatureCheck::Mismatch);
  const auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["version"], 1);
  EXPECT_EQ(body["alerts"].size(), 3u);
  EXPECT_EQ(body["idempotencyKey"], "cycle-signed");
  EXPECT_EQ(r.header("idempotency-key"), "cycle-signed");
}

TEST_F(WorkerTest, RefusesACertificateForAnotherHostAndSendsNothing) {
  TestReceiver impostor(testing::ServerIdentity{pki().other.cert_pem, pki().other.key_pem});
  enqueue("hook", testing::sample_notification("tls"));
  advance_on_retry_ = false;
  start({destination("webhook", "hook", impostor.url("/path?secret=1"))});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::RetryAt) >= 1; }));
  EXPECT_NE(events_[0].message.find("TLS handshake failed"), std::string::npos)
      << events_[0].message;
  EXPECT_EQ(events_[0].message.find("secret"), std::string::npos);
  EXPECT_TRUE(impostor.wait_for([](const auto& s) { return s.tls_failures >= 1; }));
  EXPECT_TRUE(impostor.snapshot().requests.empty());
}

TEST_F(WorkerTest, RecoversFromAResponseCutShortAndATimeout) {
  TestReceiver receiver;
  receiver.set_script([](std::size_t index, const auto&) {
    if (index == 0) return Action::close_mid_response();
    if (index == 1) return Action::hang();
    return Action::respond(200);
  });
  enqueue("hook", testing::sample_notification("flaky"));
  auto d = destination("webhook", "hook", receiver.url());
  d.timeouts.read = milliseconds(200);
  start({d});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));
  ASSERT_EQ(events_.size(), 3u);
  EXPECT_NE(events_[0].message.find("read failed"), std::string::npos) << events_[0].message;
  EXPECT_NE(events_[1].message.find("timed out after 200 ms"), std::string::npos)
      << events_[1].message;
}

TEST_F(WorkerTest, SlackMessagesStayWithinLimitsAndArePaced) {
  TestReceiver receiver(testing::ServerIdentity{pki().server.cert_pem, pki().server.key_pem});
  enqueue("slack", testing::sample_notification("big", 120));
  enqueue("slack", testing::sample_notification("small", 1));
  enqueue("slack", testing::sample_notification("third", 2));
  auto d = destination("slack", "slack", receiver.url("/services/T/B/X"));
  d.min_interval = milliseconds(150);
  WorkerOptions options;
  options.format.public_url = "https://kw.example.org";
  start({d}, options);
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 3; }));
  const auto requests = receiver.snapshot().requests;
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) EXPECT_EQ(testing::slack_limit_violations(r.body), "");
  for (std::size_t i = 1; i < requests.size(); ++i) {
    EXPECT_GE(requests[i].received_at - requests[i - 1].received_at, milliseconds(150));
  }
}

// An ntfy destination's URL is its topic's; the JSON goes to the server's root, the token as a
// bearer header over https.
TEST_F(WorkerTest, NtfyGetsOneJsonMessagePerNotificationAtTheServersRoot) {
  TestReceiver receiver(testing::ServerIdentity{pki().server.cert_pem, pki().server.key_pem});
  enqueue("phone", testing::sample_notification("n1", 3));
  auto d = destination("ntfy", "phone", receiver.url("/kw-alerts"));
  d.secret = "tk_worker_test_token";
  start({d});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));
  const auto r = receiver.snapshot().requests.at(0);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/");
  EXPECT_EQ(r.header("authorization"), "Bearer tk_worker_test_token");
  const auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["topic"], "kw-alerts");
  EXPECT_EQ(body["title"], "kernelwatch on gpu-host-1: 3 regressions");
  for (const auto& line : logs_) EXPECT_EQ(line.find("tk_worker_test_token"), std::string::npos);
}

TEST_F(WorkerTest, AlertmanagerGetsTheV2AlertArray) {
  TestReceiver receiver;
  Notification n = testing::sample_notification("am", 1);
  n.alerts.push_back(testing::sample_alert(5, Notice::Resolved));
  enqueue("am", n);
  start({destination("alertmanager", "am", receiver.url("/api/v2/alerts"))});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));
  const auto r = receiver.snapshot().requests.at(0);
  EXPECT_EQ(r.target, "/api/v2/alerts");
  const auto body = nlohmann::json::parse(r.body);
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["labels"]["benchmark"], "layer_norm/backward");
  EXPECT_TRUE(body[1].contains("endsAt"));
}

// The documented form of an Alertmanager url is its base: alerts go to its /api/v2/alerts.
TEST_F(WorkerTest, AnAlertmanagerBaseUrlPostsToItsAlertsEndpoint) {
  TestReceiver receiver;
  enqueue("am", testing::sample_notification("am-base", 1));
  std::string base = receiver.url("/");
  start({destination("alertmanager", "am", base)});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));
  EXPECT_EQ(receiver.snapshot().requests.at(0).target, "/api/v2/alerts");
}

// A misconfigured url (a 404 or 405 from whatever answers there) is a dead letter whose reason
// says which url Alertmanager takes, without repeating the configured one.
TEST_F(WorkerTest, AnAlertmanagerAtTheWrongPathIsADeadLetterThatSaysWhichUrlToUse) {
  TestReceiver receiver;
  receiver.set_script([](std::size_t, const auto&) { return Action::respond(405, ""); });
  enqueue("am", testing::sample_notification("am-wrong", 1));
  start({destination("alertmanager", "am", receiver.url("/wrong/path"))});
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Dead) == 1; }));
  const auto dead = outbox_->dead_letters(0);
  ASSERT_TRUE(dead);
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_NE(dead->front().last_error.find("HTTP 405"), std::string::npos)
      << dead->front().last_error;
  EXPECT_NE(dead->front().last_error.find("/api/v2/alerts"), std::string::npos)
      << dead->front().last_error;
  EXPECT_EQ(dead->front().last_error.find("/wrong/path"), std::string::npos);
}

// The alert_id labels of one Alertmanager request and whether it resolves each (no startsAt).
std::map<std::string, nlohmann::json> am_alerts(const testing::RecordedRequest& request) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& a : nlohmann::json::parse(request.body)) out[a["labels"]["alert_id"]] = a;
  return out;
}

// Alertmanager lets an alert expire at endsAt unless it is sent again: every open alert already
// announced firing (firing or acknowledged) is re-sent each resend_interval with endsAt 4
// intervals ahead, to Alertmanager destinations only; an alert not yet announced is not; and
// once an alert's resolve is queued, no re-send of it as firing ever follows the resolve.
TEST_F(WorkerTest, AlertmanagerReSendsOpenAlertsAndNeverAfterTheirResolve) {
  storage::AlertStore alerts(*store_);
  const auto row = [&](int i, core::AlertState state, std::optional<Notice> notified) {
    storage::AlertRow r;
    r.alert = testing::sample_alert(i).alert;
    r.alert.state = state;
    r.updated_at = now_;
    r.notified = notified;
    if (notified) r.notified_at = now_;
    return r;
  };
  {
    auto tx = store_->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(alerts.upsert(*tx, row(0, core::AlertState::Firing, Notice::Firing)));
    ASSERT_TRUE(alerts.upsert(*tx, row(1, core::AlertState::Acknowledged, Notice::Firing)));
    ASSERT_TRUE(alerts.upsert(*tx, row(2, core::AlertState::Firing, std::nullopt)));
    ASSERT_TRUE(tx->commit());
  }
  TestReceiver am;
  TestReceiver hook;
  Destination am_destination = destination("alertmanager", "am", am.url("/"));
  am_destination.resend_interval = std::chrono::seconds(1);
  WorkerOptions options;
  options.host = "gpu-host-1";
  start({am_destination, destination("webhook", "hook", hook.url())}, options);
  ASSERT_TRUE(run_until([&] { return worker_->stats().resent >= 3; }));
  for (const auto& request : am.snapshot().requests) {
    const auto sent = am_alerts(request);
    ASSERT_EQ(sent.size(), 2u) << request.body;  // alert-2 was never announced
    ASSERT_TRUE(sent.count("alert-0") && sent.count("alert-1")) << request.body;
    EXPECT_EQ(sent.at("alert-0")["labels"]["instance"], "gpu-host-1");
    EXPECT_EQ(sent.at("alert-1")["annotations"]["acknowledged"], "true");
    EXPECT_FALSE(sent.at("alert-0")["annotations"].contains("acknowledged"));
    EXPECT_EQ(sent.at("alert-0")["endsAt"], core::format_timestamp(now_ + std::chrono::seconds(4)));
  }
  EXPECT_TRUE(hook.snapshot().requests.empty());  // webhooks and Slack get reminders only
  EXPECT_EQ(worker_->stats().delivered, 0u);      // nothing went through the outbox
  auto counts = outbox_->counts();
  ASSERT_TRUE(counts);
  EXPECT_TRUE(counts->empty());  // and nothing was written to it

  // alert-0 resolves: its state and its resolve notification commit together, as the engine
  // does; the resolve is queued behind whatever re-send is in flight.
  {
    auto tx = store_->begin();
    ASSERT_TRUE(tx);
    auto resolved = row(0, core::AlertState::Resolved, Notice::Resolved);
    resolved.alert.closed_by = resolved.alert.fired;
    ASSERT_TRUE(alerts.upsert(*tx, resolved));
    Notification n = testing::sample_notification("resolve-0", 0);
    n.alerts.push_back(testing::sample_alert(0, Notice::Resolved));
    ASSERT_TRUE(outbox_->enqueue(
        *tx, storage::NewOutboxRow{"am", n.idempotency_key, serialize(n), now_, {}}));
    ASSERT_TRUE(tx->commit());
  }
  worker_->wake();
  std::size_t resolve_index = 0;
  const auto resolve_then_two_more = [&] {
    const auto requests = am.snapshot().requests;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const auto sent = am_alerts(requests[i]);
      if (sent.count("alert-0") && !sent.at("alert-0").contains("startsAt")) {
        resolve_index = i;
        return requests.size() >= i + 3;
      }
    }
    return false;
  };
  ASSERT_TRUE(run_until(resolve_then_two_more));
  const auto requests = am.snapshot().requests;
  for (std::size_t i = resolve_index + 1; i < requests.size(); ++i) {
    const auto sent = am_alerts(requests[i]);
    EXPECT_EQ(sent.count("alert-0"), 0u)
        << "a firing re-send after the resolve: " << requests[i].body;
    EXPECT_EQ(sent.count("alert-1"), 1u) << requests[i].body;
  }
  EXPECT_TRUE(hook.snapshot().requests.empty());
}

TEST_F(WorkerTest, WakePicksUpRowsEnqueuedAfterStart) {
  TestReceiver receiver;
  WorkerOptions options;
  options.poll_interval = std::chrono::hours(1);
  std::size_t idle = 0;
  options.on_idle = [&](std::string_view) { ++idle; };
  start({destination("webhook", "hook", receiver.url())}, options);
  ASSERT_TRUE(run_until([&] { return idle >= 1; }));
  enqueue("hook", testing::sample_notification("late"));
  worker_->wake();
  ASSERT_TRUE(run_until([&] { return count(Decision::Kind::Delivered) == 1; }));
  EXPECT_EQ(worker_->stats().delivered, 1u);
}

// SIGTERM right after a receiver got a notification: the answer still counts. Without the drain
// the request was cut, the row stayed pending and a restart sent it again (a second page).
TEST_F(WorkerTest, AStopWithADrainRecordsTheRequestInFlightAndStartsNoOther) {
  std::promise<void> arrived;
  std::promise<void> release;
  auto released = release.get_future().share();
  TestReceiver receiver;
  receiver.set_script([&, released](std::size_t index, const auto&) {
    if (index == 0) {
      arrived.set_value();
      released.wait_for(std::chrono::seconds(30));  // answers once the worker is stopping
    }
    return Action::respond(200);
  });
  enqueue("hook", testing::sample_notification("in-flight"));
  enqueue("hook", testing::sample_notification("queued-behind"));
  start({destination("webhook", "hook", receiver.url())});
  auto got = arrived.get_future();
  ASSERT_TRUE(
      run_until([&] { return got.wait_for(milliseconds(0)) == std::future_status::ready; }));

  bool drained = false;
  worker_->stop(std::chrono::seconds(30), [&] { drained = true; });
  io_.poll();  // the stop is in effect before the receiver answers
  release.set_value();
  ASSERT_TRUE(run_until([&] { return drained; }));
  EXPECT_EQ(count(Decision::Kind::Delivered), 1u);
  EXPECT_EQ(receiver.snapshot().requests.size(), 1u) << "nothing new starts while stopping";
  // The first row is delivered; only the second is still pending.
  auto counts = outbox_->counts();
  ASSERT_TRUE(counts) << counts.error().message;
  ASSERT_EQ(counts->size(), 1u);
  EXPECT_EQ((*counts)[0].delivered, 1);
  EXPECT_EQ((*counts)[0].pending, 1);
}

// A receiver that never answers: the drain ends, the request is cut and its row stays pending as
// it was (no attempt counted), to be sent again with the same idempotency key after a restart.
TEST_F(WorkerTest, ARequestStillInFlightWhenTheDrainEndsStaysPending) {
  TestReceiver receiver;
  receiver.set_script([](std::size_t, const auto&) { return Action::hang(); });
  enqueue("hook", testing::sample_notification("hanging"));
  auto slow = destination("webhook", "hook", receiver.url());
  slow.timeouts.read = std::chrono::minutes(5);
  start({slow});
  ASSERT_TRUE(run_until([&] { return receiver.snapshot().requests.size() == 1; }));
  bool drained = false;
  worker_->stop(milliseconds(100), [&] { drained = true; });
  ASSERT_TRUE(run_until([&] { return drained; }));
  EXPECT_TRUE(events_.empty()) << events_.size() << " outcome(s) recorded for a cut request";
  auto counts = outbox_->counts();
  ASSERT_TRUE(counts) << counts.error().message;
  ASSERT_EQ(counts->size(), 1u);
  EXPECT_EQ((*counts)[0].pending, 1);
  auto rows = outbox_->claim_due("hook", now_, 10);
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].attempts, 0);
}

TEST_F(WorkerTest, RefusesDuplicateDestinationNamesAndBadUrls) {
  auto duplicate = DeliveryWorker::create(io_, *store_,
                                          {destination("webhook", "x", "http://127.0.0.1:1/a"),
                                           destination("slack", "x", "http://127.0.0.1:1/b")},
                                          nullptr, nullptr);
  EXPECT_FALSE(duplicate);
  auto insecure = DeliveryWorker::create(
      io_, *store_, {destination("webhook", "x", "http://example.org/t0ken")}, nullptr, nullptr);
  ASSERT_FALSE(insecure);
  EXPECT_EQ(insecure.error().message.find("t0ken"), std::string::npos);
}

}  // namespace
}  // namespace kernelwatch::notifiers
