// kernelwatch with its real neighbours, as processes on loopback ports the OS picked: Debian's
// Alertmanager (an alert fires, shows in its API with kernelwatch's labels, reaches the test's
// receiver through Alertmanager's routing, stays active across three re-send intervals, and
// resolves on the return to the band) and Prometheus (scrapes /metrics with up = 1, a rule on a
// kernelwatch metric fires), plus `promtool check metrics` on the real body and `promtool check
// rules` on the shipped rule file. Nothing here is a fake.
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/alert.hpp"
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

using Reply = testing::HttpReply;
using testing::Child;
using testing::eventually;
using testing::free_port;
using testing::get_json;
using testing::http;

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kToken = "neighbours-token-83c1";

// Alertmanager and Prometheus are Go programs: they read the clock without libc, so CI's
// libfaketime reruns would shift kernelwatch's clock and not theirs, and timestamps exchanged
// between them (startsAt, endsAt) would be days apart. These tests run in the unshifted pass.
#define KW_SKIP_UNDER_FAKETIME()                                                          \
  if (std::getenv("FAKETIME") != nullptr) {                                               \
    GTEST_SKIP() << "Alertmanager and Prometheus ignore libfaketime (Go reads the clock " \
                    "itself): their clocks cannot be shifted with kernelwatch's";         \
  }

// Every byte but the unreserved ones as %XX: a long alert id as a path segment.
std::string percent_encoded(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Run i is observed i minutes after day_before_now().
using testing::day_before_now;

json record(int index, std::int64_t median_ns) {
  return testing::posted_record({day_before_now() + std::chrono::minutes(index), median_ns,
                                 "neighbours", "posted", "neighbours-test"});
}

// 1% noise around 1 ms, deterministic.
std::int64_t noisy(int i) {
  return 1'000'000 + static_cast<std::int64_t>(10'000 * std::sin(i * 1.7));
}

// The kernelwatch daemon with the given notifiers and no benchmarks (it judges posted runs).
class Kernelwatch {
 public:
  Kernelwatch(const testing::TempDir& dir, const json& notifiers,
              const json& benchmarks = json::array()) {
    testing::write_file(dir / "token", std::string(kToken) + "\n");
    std::filesystem::permissions(
        dir / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    const json config = {
        {"storage", {{"path", (dir / "kw.db").string()}}},
        {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir / "token").string()}}},
        {"backend", "cpu"},
        {"schedule", {{"interval", "1h"}, {"jitter", "0s"}, {"run_at_start", true}}},
        {"benchmarks", benchmarks},
        {"bench", {{"warmup", "1ms"}, {"repetitions", "5ms"}}},
        {"notifiers", notifiers}};
    testing::write_file(dir / "kernelwatch.json", config.dump(2));
    child_.start(dir / "kernelwatch.json", dir / "kernelwatch.log", 30s);
    scheduled_ = !benchmarks.empty();
  }
  // With benchmarks, the cycle at start has run: a batch posted during a scheduled cycle is
  // decided at that cycle's end, not in the POST's answer.
  [[nodiscard]] bool wait_for_start_cycle() const {
    if (!scheduled_) return true;
    return eventually([&] {
      const auto status = http(port(), "GET", "/api/v1/status");
      if (status.status != 200) return false;
      const json cycle = json::parse(status.body, nullptr, false)["cycle"];
      return cycle.is_object() && cycle["count"].get<int>() >= 1 && !cycle["running"].get<bool>();
    });
  }
  [[nodiscard]] std::uint16_t port() const { return child_.port(); }
  [[nodiscard]] std::string log() const { return child_.log(); }
  Reply post_runs(const json& body) const {
    return http(port(), "POST", "/api/v1/runs", body.dump(), kToken);
  }

 private:
  testing::DaemonChild child_;
  bool scheduled_ = false;
};

// Ten runs of one key with 1% noise, then one 30% slower: the alert fires.
void fire_a_regression(const Kernelwatch& kw) {
  ASSERT_TRUE(kw.wait_for_start_cycle()) << kw.log();
  json batch = json::array();
  for (int i = 0; i < 10; ++i) batch.push_back(record(i, noisy(i)));
  auto posted = kw.post_runs(batch);
  ASSERT_EQ(posted.status, 200) << posted.body;
  posted = kw.post_runs(record(10, 1'300'000));
  ASSERT_EQ(posted.status, 200) << posted.body;
  ASSERT_EQ(json::parse(posted.body)["runs"][0]["fired"].size(), 1u) << posted.body;
}

json am_alerts(std::uint16_t port, const std::string& alert_id) {
  return testing::alertmanager_alerts(port, alert_id);
}

// The webhook notifications Alertmanager sent the test's receiver, as JSON.
std::vector<json> routed(const notifiers::testing::TestReceiver& receiver) {
  std::vector<json> out;
  for (const auto& r : receiver.snapshot().requests) {
    const json body = json::parse(r.body, nullptr, false);
    if (!body.is_discarded()) out.push_back(body);
  }
  return out;
}

bool routed_with_status(const notifiers::testing::TestReceiver& receiver, const std::string& status,
                        const std::string& alert_id) {
  for (const auto& n : routed(receiver)) {
    for (const auto& a : n.value("alerts", json::array())) {
      if (a.value("status", "") == status && a["labels"].value("alert_id", "") == alert_id) {
        return true;
      }
    }
  }
  return false;
}

TEST(NeighboursE2E, AlertmanagerKeepsTheAlertActiveAcrossReSendsAndResolvesIt) {
  KW_SKIP_UNDER_FAKETIME();
  KW_REQUIRE_PROGRAM(alertmanager, "prometheus-alertmanager", "prometheus-alertmanager");
  KW_REQUIRE_PROGRAM(amtool, "amtool", "prometheus-alertmanager");
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;  // Alertmanager's webhook receiver

  // Alertmanager routes every alert to the receiver at once and says when it resolves.
  const std::string am_config =
      "route:\n"
      "  receiver: test\n"
      "  group_by: ['alertname', 'alert_id']\n"
      "  group_wait: 1s\n"
      "  group_interval: 1s\n"
      "  repeat_interval: 1h\n"
      "receivers:\n"
      "  - name: test\n"
      "    webhook_configs:\n"
      "      - url: '" +
      receiver.url("/am-hook") +
      "'\n"
      "        send_resolved: true\n";
  testing::write_file(dir / "alertmanager.yml", am_config);
  const auto checked =
      testing::run_process(amtool, {"check-config", (dir / "alertmanager.yml").string()});
  ASSERT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  const std::uint16_t am_port = free_port();
  ASSERT_NE(am_port, 0);
  std::filesystem::create_directories(dir / "am-data");
  Child am(
      alertmanager,
      {"--config.file=" + (dir / "alertmanager.yml").string(),
       "--storage.path=" + (dir / "am-data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(am_port), "--cluster.listen-address="},
      dir / "alertmanager.log");
  ASSERT_TRUE(eventually([&] { return http(am_port, "GET", "/-/ready").status == 200; }))
      << am.log();

  // kernelwatch re-sends active alerts every 2 s (endsAt 8 s ahead).
  constexpr auto kResend = 2s;
  Kernelwatch kw(dir, json::array({{{"type", "alertmanager"},
                                    {"name", "am"},
                                    {"url", "http://127.0.0.1:" + std::to_string(am_port)},
                                    {"resend_interval", "2s"},
                                    {"timeout", "5s"}}}));
  ASSERT_NE(kw.port(), 0) << kw.log();
  fire_a_regression(kw);
  const json firing = get_json(kw.port(), "/api/v1/alerts?state=firing");
  ASSERT_EQ(firing.size(), 1u) << firing.dump();
  const std::string alert_id = firing[0]["longId"];

  // It shows in Alertmanager's API with kernelwatch's labels.
  ASSERT_TRUE(eventually([&] { return am_alerts(am_port, alert_id).size() == 1; }))
      << kw.log() << am.log();
  const json shown = am_alerts(am_port, alert_id)[0];
  EXPECT_EQ(shown["labels"]["alertname"], "KernelwatchRegression");
  EXPECT_EQ(shown["labels"]["benchmark"], "synthetic/forward");
  EXPECT_EQ(shown["labels"]["provider"], "posted");
  EXPECT_EQ(shown["labels"]["workload"], "neighbours");
  EXPECT_EQ(shown["labels"]["severity"], "critical");
  EXPECT_EQ(shown["annotations"]["kernelwatch_id"], firing[0]["id"]);
  EXPECT_EQ(shown["status"]["state"], "active");

  // It reaches the receiver through Alertmanager's routing.
  ASSERT_TRUE(eventually([&] { return routed_with_status(receiver, "firing", alert_id); }))
      << am.log();

  // `kernelwatch status` shows the short id; the ack takes it (and the long id, percent-encoded).
  const std::string short_id = firing[0]["id"];
  ASSERT_EQ(short_id, core::AlertId(alert_id).short_form());
  const auto table = testing::run_kernelwatch(
      {"status", "--url", "http://127.0.0.1:" + std::to_string(kw.port())});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  // Its row: state first, the short id and kind in the ALERT column.
  const auto id_at = table.out.find(short_id + " step");
  ASSERT_NE(id_at, std::string::npos) << table.out;
  EXPECT_EQ(table.out.compare(table.out.rfind('\n', id_at) + 1, 8, "  firing"), 0) << table.out;
  EXPECT_EQ(http(kw.port(), "POST", "/api/v1/alerts/000000000000/ack", "{}", kToken).status, 404);
  auto acked = http(kw.port(), "POST", "/api/v1/alerts/" + percent_encoded(alert_id) + "/ack",
                    "{\"rebaseline\": false}", kToken);
  ASSERT_EQ(acked.status, 200) << acked.body;
  EXPECT_EQ(json::parse(acked.body)["id"], short_id);
  acked = http(kw.port(), "POST", "/api/v1/alerts/" + short_id + "/ack", "{\"rebaseline\": false}",
               kToken);
  ASSERT_EQ(acked.status, 200) << acked.body;
  EXPECT_EQ(json::parse(acked.body)["state"], "acknowledged");
  EXPECT_EQ(json::parse(acked.body)["longId"], alert_id);

  // Acknowledged, it stays active in Alertmanager (an annotation says so, the labels are the
  // same) across three re-send intervals: endsAt moves forward at each re-send and Alertmanager
  // never resolves it meanwhile.
  ASSERT_TRUE(eventually([&] {
    const json now = am_alerts(am_port, alert_id);
    return now.size() == 1 && now[0]["annotations"].value("acknowledged", "") == "true";
  })) << kw.log();
  EXPECT_EQ(am_alerts(am_port, alert_id)[0]["labels"], shown["labels"]);
  std::set<std::string> ends;
  bool always_active = true;
  const bool moved = eventually(
      [&] {
        const json now = am_alerts(am_port, alert_id);
        if (now.size() != 1 || now[0]["status"]["state"] != "active") {
          always_active = false;
          return true;
        }
        ends.insert(now[0]["endsAt"].get<std::string>());
        return ends.size() >= 4;  // the first send and three re-sends
      },
      4 * kResend + 60s);
  EXPECT_TRUE(moved && always_active) << "endsAt seen: " << json(ends).dump() << "\n" << kw.log();
  EXPECT_FALSE(routed_with_status(receiver, "resolved", alert_id));
  // The re-sends went to Alertmanager directly: the outbox holds the one firing notification.
  const json status = get_json(kw.port(), "/api/v1/status");
  ASSERT_EQ(status["outbox"].size(), 1u) << status.dump();
  EXPECT_EQ(status["outbox"][0]["delivered"], 1);

  // Back in the band: the alert resolves in kernelwatch, in Alertmanager and at the receiver.
  const auto back = kw.post_runs(record(11, noisy(11)));
  ASSERT_EQ(back.status, 200) << back.body;
  ASSERT_EQ(json::parse(back.body)["runs"][0]["resolved"].size(), 1u) << back.body;
  EXPECT_TRUE(eventually([&] { return am_alerts(am_port, alert_id).empty(); }))
      << am_alerts(am_port, alert_id).dump();
  EXPECT_TRUE(eventually([&] { return routed_with_status(receiver, "resolved", alert_id); }))
      << am.log();
}

TEST(NeighboursE2E, PrometheusScrapesTheMetricsAndARuleOnThemFires) {
  KW_SKIP_UNDER_FAKETIME();
  KW_REQUIRE_PROGRAM(prometheus, "prometheus", "prometheus");
  KW_REQUIRE_PROGRAM(promtool, "promtool", "prometheus");
  testing::TempDir dir;
  // One small CPU case: the cycle at start succeeds.
  Kernelwatch kw(dir, json::array(), json::parse(R"([{"kernel": "layer_norm", "pass": "forward",
                                  "providers": ["kernelwatch-fused"],
                                  "workloads": ["hidden256-rows16-fp32"]}])"));
  ASSERT_NE(kw.port(), 0) << kw.log();

  // The shipped rule file is valid, and so is the one this test adds.
  const auto shipped = testing::run_process(
      promtool, {"check", "rules",
                 (std::filesystem::path(KW_SOURCE_DIR) / "config/kernelwatch.rules.yml").string()});
  EXPECT_EQ(shipped.exit_code, 0) << shipped.out << shipped.err;
  testing::write_file(dir / "rules.yml",
                      "groups:\n"
                      "  - name: kernelwatch-test\n"
                      "    rules:\n"
                      "      - alert: KernelwatchTestAlertFiring\n"
                      "        expr: kernelwatch_alerts{state=\"firing\"} > 0\n");
  const auto rules =
      testing::run_process(promtool, {"check", "rules", (dir / "rules.yml").string()});
  ASSERT_EQ(rules.exit_code, 0) << rules.out << rules.err;

  const std::uint16_t prom_port = free_port();
  ASSERT_NE(prom_port, 0);
  testing::write_file(dir / "prometheus.yml",
                      "global:\n"
                      "  scrape_interval: 1s\n"
                      "  evaluation_interval: 1s\n"
                      "rule_files:\n"
                      "  - '" +
                          (dir / "rules.yml").string() +
                          "'\n"
                          "scrape_configs:\n"
                          "  - job_name: kernelwatch\n"
                          "    static_configs:\n"
                          "      - targets: ['127.0.0.1:" +
                          std::to_string(kw.port()) + "']\n");
  std::filesystem::create_directories(dir / "tsdb");
  Child prom(prometheus,
             {"--config.file=" + (dir / "prometheus.yml").string(),
              "--storage.tsdb.path=" + (dir / "tsdb").string(),
              "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
             dir / "prometheus.log");
  ASSERT_TRUE(eventually([&] { return http(prom_port, "GET", "/-/ready").status == 200; }))
      << prom.log();

  // up == 1 for the job: Prometheus scraped and parsed kernelwatch's /metrics.
  const auto up_is_one = [&] {
    const json r = get_json(prom_port, "/api/v1/query?query=up%7Bjob%3D%22kernelwatch%22%7D");
    if (!r.is_object() || r["data"]["result"].size() != 1) return false;
    return r["data"]["result"][0]["value"][1] == "1";
  };
  ASSERT_TRUE(eventually(up_is_one)) << prom.log();

  // A regression fires in kernelwatch; the rule on kernelwatch_alerts fires in Prometheus.
  fire_a_regression(kw);
  const auto rule_fires = [&] {
    const json r = get_json(prom_port, "/api/v1/alerts");
    if (!r.is_object()) return false;
    for (const auto& a : r["data"]["alerts"]) {
      if (a["labels"]["alertname"] == "KernelwatchTestAlertFiring" && a["state"] == "firing") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(eventually(rule_fires)) << get_json(prom_port, "/api/v1/alerts").dump();
  // What operators alert on: the cycle at start succeeded after the process started, none
  // failed, and nothing waits in an outbox (there is no destination).
  const auto query = [&](const std::string& promql) {
    std::string encoded;
    for (const unsigned char c : promql) {
      if (std::isalnum(c) || c == '_') {
        encoded.push_back(static_cast<char>(c));
      } else {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", c);
        encoded += hex;
      }
    }
    return get_json(prom_port, "/api/v1/query?query=" + encoded);
  };
  const auto one_result = [&](const std::string& promql) {
    const json r = query(promql);
    return r.is_object() && r["data"]["result"].size() == 1;
  };
  EXPECT_TRUE(eventually([&] {
    return one_result(
        "kernelwatch_last_successful_cycle_timestamp_seconds >= "
        "process_start_time_seconds");
  })) << query("kernelwatch_last_successful_cycle_timestamp_seconds").dump()
      << kw.log();
  EXPECT_TRUE(one_result("kernelwatch_cycles_failed_total == 0"))
      << query("kernelwatch_cycles_failed_total").dump();
  EXPECT_TRUE(one_result("time() - process_start_time_seconds < 3600"))
      << query("process_start_time_seconds").dump();

  // promtool check metrics (its linter included) passes on the body, read from stdin.
  const auto body = http(kw.port(), "GET", "/metrics");
  ASSERT_EQ(body.status, 200);
  testing::write_file(dir / "metrics.txt", body.body);
  const auto check =
      testing::run_process("/bin/sh", {"-c", "exec \"$0\" check metrics < \"$1\"",
                                       promtool.string(), (dir / "metrics.txt").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err << body.body;
}

}  // namespace
}  // namespace kernelwatch
