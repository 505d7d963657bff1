// kernelwatch with a real three-peer cluster of Debian's Alertmanager on 127.0.0.1 (gossip
// between the peers, each with its own storage): with one peer stopped, every alert and its
// resolve reach the test's receiver once, the stopped peer's notifications are not dead letters,
// and when it comes back it gets the open alert by the re-send, never the stale history; and a
// SIGHUP that changes the peer list (loopback HTTP servers as peers). The kernelwatch binary
// runs as a process; nothing is a fake. Synchronised by polling the peers' and kernelwatch's
// state, never by sleeping.
#include <signal.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/daemon/support/neighbour_process.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::eventually;
using testing::get_json;
using testing::http;
using testing::metric;
using namespace std::chrono_literals;

constexpr const char* kToken = "cluster-token-5e1d";

// Go reads the clock itself: libfaketime cannot shift Alertmanager's clock with kernelwatch's.
#define KW_SKIP_UNDER_FAKETIME()                                                               \
  if (std::getenv("FAKETIME") != nullptr) {                                                    \
    GTEST_SKIP() << "Alertmanager ignores libfaketime (Go reads the clock itself): its clock " \
                    "cannot be shifted with kernelwatch's";                                    \
  }

// Alertmanager's routing: every alert its own group, at once (group_wait 1 s), the resolve at
// the next flush (group_interval 5 s, long beside the peers' 200 ms wait per position, so a
// resolve never meets a peer still waiting on its previous flush; see the peers' flags).
std::string alertmanager_config(const std::string& receiver_url) {
  return "route:\n"
         "  receiver: test\n"
         "  group_by: ['alertname', 'alert_id']\n"
         "  group_wait: 1s\n"
         "  group_interval: 5s\n"
         "  repeat_interval: 1h\n"
         "receivers:\n"
         "  - name: test\n"
         "    webhook_configs:\n"
         "      - url: '" +
         receiver_url +
         "'\n"
         "        send_resolved: true\n";
}

// Three Alertmanager peers gossiping on loopback ports picked at start.
class Cluster {
 public:
  Cluster(std::filesystem::path program, std::filesystem::path dir)
      : program_(std::move(program)), dir_(std::move(dir)) {
    for (auto& peer : peers_) {
      peer.web = testing::free_port();
      peer.gossip = testing::free_port();
    }
  }

  [[nodiscard]] std::uint16_t web(std::size_t i) const { return peers_[i].web; }
  [[nodiscard]] std::string url(std::size_t i) const {
    return "http://127.0.0.1:" + std::to_string(peers_[i].web);
  }
  [[nodiscard]] bool running(std::size_t i) const { return peers_[i].process != nullptr; }

  // Starts peer i (again) with its own storage; false when it exited instead of answering.
  bool start(std::size_t i) {
    Peer& peer = peers_[i];
    const auto storage = dir_ / ("am-" + std::to_string(i + 1));
    std::filesystem::create_directories(storage);
    std::vector<std::string> args = {
        "--config.file=" + (dir_ / "alertmanager.yml").string(),
        "--storage.path=" + storage.string(),
        "--web.listen-address=127.0.0.1:" + std::to_string(peer.web),
        "--cluster.listen-address=127.0.0.1:" + std::to_string(peer.gossip),
        "--cluster.advertise-address=127.0.0.1:" + std::to_string(peer.gossip),
        // Quick gossip and settling; a peer at position p waits p x 200 ms for the others'
        // notification log before it notifies itself.
        "--cluster.gossip-interval=50ms", "--cluster.pushpull-interval=1s",
        "--cluster.peer-timeout=200ms", "--cluster.settle-timeout=10s"};
    for (const Peer& other : peers_) {
      args.push_back("--cluster.peer=127.0.0.1:" + std::to_string(other.gossip));
    }
    peer.process = std::make_unique<testing::Child>(
        program_, args,
        dir_ / ("am-" + std::to_string(i + 1) + "." + std::to_string(++starts_) + ".log"));
    return eventually([&] {
             return http(peer.web, "GET", "/-/ready").status == 200 || peer.process->exited();
           }) &&
           !peer.process->exited();
  }

  void stop(std::size_t i) {
    ASSERT_TRUE(peers_[i].process->stop()) << "peer " << i + 1 << " did not stop on SIGTERM";
    peers_[i].process.reset();
  }

  // Every running peer has settled and sees exactly the running ones.
  bool formed() const {
    std::size_t up = 0;
    for (const Peer& peer : peers_) up += peer.process ? 1 : 0;
    for (const Peer& peer : peers_) {
      if (!peer.process) continue;
      const json status = get_json(peer.web, "/api/v2/status");
      if (!status.is_object() || status["cluster"]["status"] != "ready" ||
          status["cluster"]["peers"].size() != up) {
        return false;
      }
    }
    return true;
  }

  // Every running peer has flushed and dropped every aggregation group: each has made its last
  // decision (notify, or leave it to the peer that did) about every alert, resolves included.
  // Alertmanager drops an emptied group at its maintenance, every 30 s.
  bool settled() const {
    for (const Peer& peer : peers_) {
      if (peer.process &&
          metric(peer.web, "alertmanager_dispatcher_aggregation_groups").value_or(-1) != 0) {
        return false;
      }
    }
    return true;
  }

  std::string logs() const {
    std::string out;
    for (const Peer& peer : peers_) {
      if (peer.process) out += peer.process->log();
    }
    return out;
  }

 private:
  struct Peer {
    std::uint16_t web = 0;
    std::uint16_t gossip = 0;
    std::unique_ptr<testing::Child> process;
  };
  std::filesystem::path program_;
  std::filesystem::path dir_;
  std::array<Peer, 3> peers_;
  int starts_ = 0;
};

// A kernelindex record of the posted key `workload`, observed `index` minutes after
// day_before_now() (relative to the test's clock, never a calendar date).
json record(const std::string& workload, int index, std::int64_t median_ns) {
  return testing::posted_record({testing::day_before_now() + std::chrono::minutes(index), median_ns,
                                 workload, "posted", "cluster-test"});
}

std::int64_t noisy(int i) {
  return 1'000'000 + static_cast<std::int64_t>(10'000 * std::sin(i * 1.7));
}

// How many webhook notifications Alertmanager sent the receiver with this alert in this status.
std::size_t routed(const notifiers::testing::TestReceiver& receiver, const std::string& status,
                   const std::string& alert_id) {
  std::size_t n = 0;
  for (const auto& r : receiver.snapshot().requests) {
    const json body = json::parse(r.body, nullptr, false);
    if (body.is_discarded()) continue;
    for (const auto& a : body.value("alerts", json::array())) {
      if (a.value("status", "") == status && a["labels"].value("alert_id", "") == alert_id) ++n;
    }
  }
  return n;
}

// The outbox row counts of one destination in kernelwatch's status; null when it has none.
json outbox_of(std::uint16_t kw_port, const std::string& destination) {
  const json status = get_json(kw_port, "/api/v1/status");
  if (!status.is_object()) return nullptr;
  for (const auto& d : status.value("outbox", json::array())) {
    if (d.value("destination", "") == destination) return d;
  }
  return nullptr;
}

// kernelwatch sending to the Alertmanager peers `urls`: re-sends every second (an alert's
// lifetime in Alertmanager: 4 s), quick retries. Writes DIR/kernelwatch.json.
json kernelwatch_config(const testing::TempDir& dir, const std::vector<std::string>& urls) {
  return {{"storage", {{"path", (dir / "kw.db").string()}}},
          {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir / "token").string()}}},
          {"backend", "cpu"},
          {"notifiers",
           json::array({{{"type", "alertmanager"},
                         {"name", "am"},
                         {"urls", urls},
                         {"resend_interval", "1s"},
                         {"timeout", "2s"},
                         {"backoff", {{"base", "100ms"}, {"cap", "500ms"}, {"max_age", "1h"}}}}})}};
}

void start_kernelwatch(testing::DaemonChild& kw, const testing::TempDir& dir,
                       const std::vector<std::string>& urls) {
  testing::write_file(dir / "token", std::string(kToken) + "\n");
  std::filesystem::permissions(dir / "token", std::filesystem::perms::owner_read);
  testing::write_file(dir / "kernelwatch.json", kernelwatch_config(dir, urls).dump(2));
  kw.start(dir / "kernelwatch.json", dir / "kernelwatch.log", 30s);
}

json post_runs(std::uint16_t kw_port, const json& body) {
  const auto reply = http(kw_port, "POST", "/api/v1/runs", body.dump(), kToken);
  EXPECT_EQ(reply.status, 200) << reply.body;
  return json::parse(reply.body, nullptr, false);
}

// Ten runs of the key `workload` in 1% noise, then one 30% slower: its alert fires. Its long id.
std::string fire_alert(std::uint16_t kw_port, const std::string& workload, int first) {
  json batch = json::array();
  for (int i = 0; i < 10; ++i) batch.push_back(record(workload, first + i, noisy(i)));
  post_runs(kw_port, batch);
  const json fired = post_runs(kw_port, record(workload, first + 10, 1'300'000));
  EXPECT_EQ(fired["runs"][0]["fired"].size(), 1u) << fired.dump();
  const json firing = get_json(kw_port, "/api/v1/alerts?state=firing");
  for (const auto& a : firing) {
    if (a.value("workload", "") == workload) return a["longId"].get<std::string>();
  }
  ADD_FAILURE() << "no firing alert for " << workload << ": " << firing.dump();
  return std::string();
}

// A run back in the band: the key's alert resolves.
void resolve_alert(std::uint16_t kw_port, const std::string& workload, int index) {
  const json back = post_runs(kw_port, record(workload, index, noisy(11)));
  EXPECT_EQ(back["runs"][0]["resolved"].size(), 1u) << back.dump();
}

TEST(AlertmanagerClusterE2E, WithOnePeerDownEachAlertAndResolveReachTheReceiverOnce) {
  KW_SKIP_UNDER_FAKETIME();
  KW_REQUIRE_PROGRAM(alertmanager, "prometheus-alertmanager", "prometheus-alertmanager");
  KW_REQUIRE_PROGRAM(amtool, "amtool", "prometheus-alertmanager");
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;  // Alertmanager's webhook receiver
  testing::write_file(dir / "alertmanager.yml", alertmanager_config(receiver.url("/am-hook")));
  const auto checked =
      testing::run_process(amtool, {"check-config", (dir / "alertmanager.yml").string()});
  ASSERT_EQ(checked.exit_code, 0) << checked.out << checked.err;

  Cluster cluster(alertmanager, dir.path());
  for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(cluster.start(i)) << cluster.logs();
  ASSERT_TRUE(eventually([&] { return cluster.formed(); })) << cluster.logs();
  cluster.stop(2);  // peer 3 is down before kernelwatch starts
  ASSERT_TRUE(eventually([&] { return cluster.formed(); })) << cluster.logs();

  testing::DaemonChild kw;
  start_kernelwatch(kw, dir, {cluster.url(0), cluster.url(1), cluster.url(2)});
  ASSERT_NE(kw.port(), 0) << kw.log();
  const auto fire = [&](const std::string& workload, int first) {
    return fire_alert(kw.port(), workload, first);
  };
  const auto resolve = [&](const std::string& workload, int index) {
    resolve_alert(kw.port(), workload, index);
  };
  const auto active_on = [&](std::size_t peer, const std::string& alert_id) {
    const json shown = testing::alertmanager_alerts(cluster.web(peer), alert_id);
    return shown.size() == 1 && shown[0]["status"]["state"] == "active";
  };

  // Alert A fires and resolves while peer 3 is down: the running peers both get it, the
  // receiver gets it once, and its resolve once.
  const std::string a = fire("cluster-a", 0);
  ASSERT_FALSE(a.empty());
  ASSERT_TRUE(eventually([&] { return active_on(0, a) && active_on(1, a); })) << kw.log();
  ASSERT_TRUE(eventually([&] { return routed(receiver, "firing", a) >= 1; })) << cluster.logs();
  resolve("cluster-a", 11);
  ASSERT_TRUE(eventually([&] { return routed(receiver, "resolved", a) >= 1; })) << cluster.logs();

  // Peer 3's two notifications are not dead letters: once older than the alert's lifetime
  // (4 s) they count as taken by the other peers, and nothing is pending for it any more.
  ASSERT_TRUE(eventually([&] {
    const json am3 = outbox_of(kw.port(), "am/3");
    return am3.is_object() && am3["pending"] == 0 && am3["delivered"] == 2;
  })) << outbox_of(kw.port(), "am/3").dump()
      << kw.log();
  for (const char* peer : {"am/1", "am/2", "am/3"}) {
    const json counts = outbox_of(kw.port(), peer);
    EXPECT_EQ(counts["delivered"], 2) << peer << ": " << counts.dump();
    EXPECT_EQ(counts["dead"], 0) << peer << ": " << counts.dump();
  }
  EXPECT_NE(kw.log().find("not sent to this peer: another peer of cluster `am` took them"),
            std::string::npos)
      << kw.log();

  // Alert B fires while peer 3 is still down; then peer 3 comes back and gets B, the open
  // alert, by the re-send: the current state, and no stale resolve (A's).
  const std::string b = fire("cluster-b", 100);
  ASSERT_FALSE(b.empty());
  ASSERT_TRUE(eventually([&] { return active_on(0, b) && active_on(1, b); })) << kw.log();
  ASSERT_TRUE(eventually([&] { return routed(receiver, "firing", b) >= 1; })) << cluster.logs();
  ASSERT_TRUE(cluster.start(2)) << cluster.logs();
  ASSERT_TRUE(eventually([&] { return cluster.formed(); })) << cluster.logs();
  ASSERT_TRUE(eventually([&] { return active_on(2, b); })) << kw.log() << cluster.logs();
  EXPECT_TRUE(testing::alertmanager_alerts(cluster.web(2), a).empty());
  EXPECT_EQ(metric(cluster.web(2),
                   "alertmanager_alerts_received_total{status=\"resolved\",version=\"v2\"}"),
            0.0)
      << "the late peer was sent a resolve";

  // Peer 3 goes down again; B resolves. The receiver gets B's resolve once.
  cluster.stop(2);
  ASSERT_TRUE(eventually([&] { return cluster.formed(); })) << cluster.logs();
  resolve("cluster-b", 111);
  ASSERT_TRUE(eventually([&] { return routed(receiver, "resolved", b) >= 1; })) << cluster.logs();

  // Once every running peer has dropped its groups (each has decided about every alert), the
  // receiver holds each alert once and each resolve once.
  ASSERT_TRUE(eventually([&] { return cluster.settled(); }, 90s)) << cluster.logs();
  EXPECT_EQ(routed(receiver, "firing", a), 1u);
  EXPECT_EQ(routed(receiver, "resolved", a), 1u);
  EXPECT_EQ(routed(receiver, "firing", b), 1u);
  EXPECT_EQ(routed(receiver, "resolved", b), 1u);
  // Nothing is owed to peer 3 and nothing became a dead letter.
  ASSERT_TRUE(eventually([&] {
    const json am3 = outbox_of(kw.port(), "am/3");
    return am3.is_object() && am3["pending"] == 0;
  })) << kw.log();
  const json status = get_json(kw.port(), "/api/v1/status");
  for (const auto& d : status["outbox"]) EXPECT_EQ(d["dead"], 0) << d.dump();
  kw.stop();
}

// Whether an Alertmanager-API request the receiver recorded carried this alert, firing (with a
// startsAt) or resolved, as an outbox notification or as a re-send (Idempotency-Key
// <host>/resend/<ms>).
enum class Sent { Notification, ReSend };
bool received(const notifiers::testing::TestReceiver& peer, const std::string& alert_id,
              bool firing, Sent how) {
  for (const auto& r : peer.snapshot().requests) {
    const bool resend = r.header("idempotency-key").find("/resend/") != std::string::npos;
    if (resend != (how == Sent::ReSend)) continue;
    const json body = json::parse(r.body, nullptr, false);
    if (!body.is_array()) continue;
    for (const auto& a : body) {
      if (a["labels"].value("alert_id", "") == alert_id && a.contains("startsAt") == firing) {
        return true;
      }
    }
  }
  return false;
}

// SIGHUP applies a changed peer list like any notifier setting: a peer added to `urls` gets the
// next notifications and the open alerts by the re-send, never the history it missed; a broken
// list is logged and the running one kept. The peers here are loopback HTTP servers answering
// as Alertmanager's API does; a peer URL's path never reaches the log.
TEST(AlertmanagerClusterE2E, ASighupAddsAPeerAndABrokenListKeepsTheRunningOne) {
  testing::TempDir dir;
  notifiers::testing::TestReceiver first;
  notifiers::testing::TestReceiver second;
  const std::string path = "/am-path-s3cr3t";
  testing::DaemonChild kw;
  start_kernelwatch(kw, dir, {first.url(path)});
  ASSERT_NE(kw.port(), 0) << kw.log();
  const auto reload = [&](const std::vector<std::string>& urls, const std::string& logged) {
    testing::write_file(dir / "kernelwatch.json", kernelwatch_config(dir, urls).dump(2));
    const auto before = kw.log().size();
    ASSERT_EQ(::kill(kw.pid(), SIGHUP), 0);
    ASSERT_TRUE(eventually([&] { return kw.log().find(logged, before) != std::string::npos; }))
        << kw.log();
  };

  const std::string a = fire_alert(kw.port(), "sighup-a", 0);
  ASSERT_TRUE(eventually([&] { return received(first, a, true, Sent::Notification); }));

  // A second peer: it gets A, still open, by the re-send, and not A's notification.
  reload({first.url(path), second.url(path)}, "SIGHUP: config reloaded");
  ASSERT_TRUE(eventually([&] { return received(second, a, true, Sent::ReSend); })) << kw.log();
  EXPECT_FALSE(received(second, a, true, Sent::Notification));
  const std::string b = fire_alert(kw.port(), "sighup-b", 100);
  ASSERT_TRUE(eventually([&] {
    return received(first, b, true, Sent::Notification) &&
           received(second, b, true, Sent::Notification);
  })) << kw.log();

  // An empty list: refused with its reason; both peers keep getting B's resolve.
  reload({}, "SIGHUP: keeping the running config: " + (dir / "kernelwatch.json").string() +
                 ": notifiers[0].urls: lists no URL: a cluster needs at least one peer");
  resolve_alert(kw.port(), "sighup-b", 111);
  ASSERT_TRUE(eventually([&] {
    return received(first, b, false, Sent::Notification) &&
           received(second, b, false, Sent::Notification);
  })) << kw.log();
  EXPECT_EQ(kw.log().find("s3cr3t"), std::string::npos) << kw.log();
  kw.stop();
}

}  // namespace
}  // namespace kernelwatch
