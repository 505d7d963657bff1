// The real kernelwatch daemon across restarts and with history: reminders after a SIGKILL and a
// restart, imported history's alerts (listed, never paged), a changed protocol.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/alert.hpp"
#include "core/digest.hpp"
#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/daemon/support/daemon_process.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/notifiers/support/spawn.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using Reply = testing::HttpReply;
using testing::eventually;
using testing::http;

using nlohmann::json;
using namespace std::chrono_literals;
namespace spawn = notifiers::testing;

using namespace daemon_e2e;

// The alert ids a notification carries.
std::vector<std::string> alert_ids(const notifiers::testing::RecordedRequest& request) {
  std::vector<std::string> ids;
  const json body = json::parse(request.body);
  for (const auto& alert : body["alerts"]) ids.push_back(alert["id"]);
  return ids;
}

// Alerts fired from runs observed 3 days, 3 hours and 3 minutes ago, then SIGKILL and a restart:
// the restart sends nothing (a reminder is due repeat_interval after the notification that was
// queued, whatever the runs' dates), and when it is due each alert is reminded exactly once.
TEST(DaemonE2E, ARestartNeverRemindsEarlyAndEachAlertIsRemindedOnceWhenDue) {
  constexpr auto kRepeat = 20s;
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;
  DaemonProcess daemon(dir, receiver.url());
  daemon.set_detector(receiver.url(), {{"repeat_interval", "20s"}});
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto now = core::Timestamp::clock::now();
  json batch = json::array();
  add_stepped_series(batch, "three-days-ago", now - 72h);
  add_stepped_series(batch, "three-hours-ago", now - 3h);
  add_stepped_series(batch, "three-minutes-ago", now - 3min);
  ASSERT_EQ(http(daemon.port(), "POST", "/api/v1/runs", batch.dump(), kToken).status, 200);
  ASSERT_TRUE(receiver.wait_for_requests(1)) << daemon.log();
  const auto first = receiver.snapshot().requests.at(0);
  const auto fired = alert_ids(first);
  ASSERT_EQ(fired.size(), 3u) << first.body;
  // Delivered and marked so (a SIGKILL between the two would redeliver it, rightly, under the
  // same idempotency key: not what this test is about).
  ASSERT_TRUE(eventually([&] {
    const auto status = json::parse(http(daemon.port(), "GET", "/api/v1/status").body);
    return !status["outbox"].empty() && status["outbox"][0]["delivered"] == 1;
  })) << daemon.log();

  daemon.kill_hard();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  // A marker: a new alert after the restart. Notifications leave one destination in the order
  // they were queued, so a reminder queued by the restart would arrive before it.
  json marker = json::array();
  add_stepped_series(marker, "marker", core::Timestamp::clock::now() - 1min);
  ASSERT_EQ(http(daemon.port(), "POST", "/api/v1/runs", marker.dump(), kToken).status, 200);
  ASSERT_TRUE(receiver.wait_for_requests(2)) << daemon.log();
  const auto after_restart = receiver.snapshot().requests.at(1);
  ASSERT_EQ(alert_ids(after_restart).size(), 1u) << after_restart.body;
  EXPECT_EQ(json::parse(after_restart.body)["alerts"][0]["key"]["workload"], "marker");
  // Judging "not early" needs the restart to happen inside the interval.
  ASSERT_LT(after_restart.received_at - first.received_at, kRepeat) << "machine too slow";

  // Each of the three alerts is reminded once, not before repeat_interval after it was sent.
  const auto reminded = [&](const notifiers::testing::TestReceiver::Snapshot& snapshot) {
    std::set<std::string> seen;
    for (std::size_t i = 2; i < snapshot.requests.size(); ++i) {
      for (const auto& id : alert_ids(snapshot.requests[i])) seen.insert(id);
    }
    return std::all_of(fired.begin(), fired.end(), [&](const auto& id) { return seen.count(id); });
  };
  ASSERT_TRUE(receiver.wait_for(reminded, 60s)) << daemon.log();
  // A second marker closes the window: every reminder queued so far arrives before it.
  json closing = json::array();
  add_stepped_series(closing, "closing-marker", core::Timestamp::clock::now() - 1min);
  ASSERT_EQ(http(daemon.port(), "POST", "/api/v1/runs", closing.dump(), kToken).status, 200);
  const auto is_closing = [](const notifiers::testing::RecordedRequest& r) {
    return r.body.find("closing-marker") != std::string::npos;
  };
  ASSERT_TRUE(receiver.wait_for([&](const auto& snapshot) {
    return std::any_of(snapshot.requests.begin(), snapshot.requests.end(), is_closing);
  })) << daemon.log();
  const auto requests = receiver.snapshot().requests;
  const auto closing_at = static_cast<std::size_t>(
      std::find_if(requests.begin(), requests.end(), is_closing) - requests.begin());
  std::map<std::string, int> reminders;
  for (std::size_t i = 2; i < closing_at; ++i) {
    for (const auto& id : alert_ids(requests[i])) {
      if (std::find(fired.begin(), fired.end(), id) == fired.end()) continue;
      ++reminders[id];
      EXPECT_GE(requests[i].received_at - first.received_at, kRepeat - 1s) << "reminded early";
      EXPECT_EQ(json::parse(requests[i].body)["alerts"][0]["state"], "firing");
    }
  }
  for (const auto& id : fired) EXPECT_EQ(reminders[id], 1) << id;
  daemon.stop();
}

// id -> state of a JSON array of alerts (those of one origin, when it is given).
std::map<std::string, std::string> states_of(const json& alerts, const std::string& origin = "") {
  std::map<std::string, std::string> out;
  for (const auto& a : alerts) {
    if (!origin.empty() && a.value("origin", "") != origin) continue;
    // The API lists the short id and the long one; backtest, the long one.
    const json& id = a.contains("longId") ? a["longId"] : a["id"];
    out[id.get<std::string>()] = a["state"].get<std::string>();
  }
  return out;
}

// Imported history: the alerts its replay implies are the ones `backtest` prints, stored as the
// daemon's alerts of origin "history"; status shows them; nobody is paged for them, not at start,
// not when a live alert is sent, not on acknowledging; a restart keeps them as they are.
TEST(DaemonE2E, ImportedHistorysAlertsAreBacktestsListedInStatusAndNeverPaged) {
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;
  DaemonProcess daemon(dir, receiver.url());
  const auto imported = testing::run_kernelwatch(
      {"import", "--db", (dir / "kw.db").string(),
       testing::liger_csv("weekly_ci.tvd_layer_norm.csv").string(),
       testing::liger_csv("all_benchmark_data.tvd_layer_norm.csv").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto backtest =
      testing::run_kernelwatch({"backtest", "--db", (dir / "kw.db").string(), "--json"});
  ASSERT_EQ(backtest.exit_code, 0) << backtest.err;
  const auto expected = states_of(json::parse(backtest.out));
  std::size_t open = 0;
  for (const auto& [id, state] : expected) open += state == "firing" ? 1 : 0;
  ASSERT_GT(open, 0u) << "the Liger history ends with open alerts";

  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto listed = http(daemon.port(), "GET", "/api/v1/alerts?limit=10000");
  ASSERT_EQ(listed.status, 200) << listed.body;
  const json alerts = json::parse(listed.body);
  EXPECT_EQ(states_of(alerts), expected);
  for (const auto& a : alerts) {
    EXPECT_EQ(a["origin"], "history") << a.dump();
    EXPECT_TRUE(a["notified"].is_null()) << a.dump();
  }
  // The status names each firing one as its key's open alert, of origin history.
  const json status = json::parse(http(daemon.port(), "GET", "/api/v1/status").body);
  std::set<std::string> open_in_status;
  for (const auto& key : status["keys"]) {
    if (!key["openAlert"].is_object()) continue;
    EXPECT_EQ(key["openAlert"]["origin"], "history") << key.dump();
    open_in_status.insert(key["openAlert"]["longId"].get<std::string>());
  }
  // A key's open alert is its own or, where its step was one of an incident's, its member alert.
  std::set<std::string> firing;
  std::set<std::string> own_firing;  // alerts of one key, not members of an incident
  for (const auto& a : json::parse(backtest.out)) {
    if (a["state"] != "firing") continue;
    if (a["members"].empty()) {
      firing.insert(a["id"].get<std::string>());
      own_firing.insert(a["id"].get<std::string>());
    }
    for (const auto& member : a["members"]) {
      if (member["state"] == "firing") firing.insert(member["id"].get<std::string>());
    }
  }
  EXPECT_EQ(open_in_status, firing);
  const auto table = testing::run_kernelwatch(
      {"status", "--url", "http://127.0.0.1:" + std::to_string(daemon.port())});
  EXPECT_NE(table.out.find(std::to_string(firing.size()) +
                           " of the open alerts (*) were found in imported history"),
            std::string::npos)
      << table.out;

  // Acknowledging one of them works and pages nobody.
  ASSERT_FALSE(own_firing.empty());
  const std::string acked = *own_firing.begin();
  const auto ack =
      http(daemon.port(), "POST", "/api/v1/alerts/" + core::AlertId(acked).short_form() + "/ack",
           "{}", kToken);
  ASSERT_EQ(ack.status, 200) << ack.body;
  // A live alert goes out; it is the only one the receiver ever gets.
  ASSERT_EQ(
      http(daemon.port(), "POST", "/api/v1/runs", stepped_batch({"live-marker"}).dump(), kToken)
          .status,
      200);
  ASSERT_TRUE(receiver.wait_for_requests(1)) << daemon.log();
  for (const auto& request : receiver.snapshot().requests) {
    // Named: a range over `json::parse(...)["alerts"]` would outlive the parsed document.
    const json body = json::parse(request.body);
    for (const auto& a : body["alerts"]) {
      EXPECT_EQ(a["key"]["workload"], "live-marker") << request.body;
    }
  }
  // A restart replays the same history into the same rows.
  ASSERT_EQ(::kill(daemon.pid(), SIGTERM), 0);
  ASSERT_EQ(spawn::wait_exit(daemon.pid(), 10s), std::optional<int>(0)) << daemon.log();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto after = states_of(
      json::parse(http(daemon.port(), "GET", "/api/v1/alerts?limit=10000").body), "history");
  auto want = expected;
  want[acked] = "acknowledged";
  EXPECT_EQ(after, want);
  // Anything the restart owed would go out before a second live alert.
  ASSERT_EQ(
      http(daemon.port(), "POST", "/api/v1/runs", stepped_batch({"second-marker"}).dump(), kToken)
          .status,
      200);
  ASSERT_TRUE(receiver.wait_for_requests(2)) << daemon.log();
  const auto requests = receiver.snapshot().requests;
  ASSERT_EQ(requests.size(), 2u) << [&] {
    std::string bodies;
    for (const auto& r : requests) bodies += r.body + "\n";
    return bodies + daemon.log();
  }();
  const json second = json::parse(requests[1].body);
  for (const auto& a : second["alerts"]) {
    EXPECT_EQ(a["key"]["workload"], "second-marker") << requests[1].body;
  }
  daemon.stop();
}

// bench.warmup is part of the protocol: changing it starts every case over in a new key. The
// daemon says so on SIGHUP, when the new key's first run is stored, and in its status.
TEST(DaemonE2E, AChangedProtocolIsLoggedAndShownInTheStatus) {
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;
  const std::string benchmarks =
      R"([{"kernel": "layer_norm", "pass": "forward", "providers": ["kernelwatch-fused"],
           "workloads": ["hidden256-rows16-fp32"]}])";
  DaemonProcess daemon(dir, receiver.url(), benchmarks);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto port = daemon.port();
  ASSERT_TRUE(eventually([&] {
    return daemon.log().find("cycle 1 (schedule) done in ") != std::string::npos;
  })) << daemon.log();
  EXPECT_TRUE(json::parse(http(port, "GET", "/api/v1/status").body)["protocolChanges"].empty());

  daemon.set_warmup("2ms");
  daemon.write_config(receiver.url(), benchmarks);
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  ASSERT_TRUE(eventually([&] {
    return daemon.log().find("SIGHUP: bench.warmup or bench.repetitions changed") !=
           std::string::npos;
  })) << daemon.log();
  ASSERT_EQ(http(port, "POST", "/api/v1/trigger", "{}", kToken).status, 202);
  ASSERT_TRUE(eventually([&] {
    return daemon.log().find("cycle 2 (api) done in ") != std::string::npos;
  })) << daemon.log();

  const json keys = json::parse(http(port, "GET", "/api/v1/keys").body);
  ASSERT_EQ(keys.size(), 2u) << keys.dump();
  const json status = json::parse(http(port, "GET", "/api/v1/status").body);
  ASSERT_EQ(status["protocolChanges"].size(), 1u) << status.dump();
  const json& change = status["protocolChanges"][0];
  EXPECT_EQ(change["workload"], "hidden256-rows16-fp32");
  ASSERT_EQ(change["previousKeys"].size(), 1u);
  std::set<std::string> digests{keys[0]["digest"].get<std::string>(),
                                keys[1]["digest"].get<std::string>()};
  EXPECT_EQ(digests,
            (std::set<std::string>{change["digest"].get<std::string>(),
                                   change["previousKeys"][0]["digest"].get<std::string>()}));
  const std::string replaced =
      core::short_digest(change["previousKeys"][0]["digest"].get<std::string>());
  EXPECT_NE(daemon.log().find("replaces key " + replaced + ": the protocol's settings changed"),
            std::string::npos)
      << daemon.log();
  const auto table =
      testing::run_kernelwatch({"status", "--url", "http://127.0.0.1:" + std::to_string(port)});
  EXPECT_NE(table.out.find("protocol changed: layer_norm/forward kernelwatch-fused "
                           "hidden256-rows16-fp32"),
            std::string::npos)
      << table.out;

  // A restart finds the change again in the stored runs.
  daemon.stop();
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const json again = json::parse(http(daemon.port(), "GET", "/api/v1/status").body);
  ASSERT_EQ(again["protocolChanges"].size(), 1u) << again.dump();
  EXPECT_EQ(again["protocolChanges"][0]["digest"], change["digest"]);
  EXPECT_EQ(again["protocolChanges"][0]["previousKeys"], change["previousKeys"]);
  daemon.stop();
}

}  // namespace
}  // namespace kernelwatch
