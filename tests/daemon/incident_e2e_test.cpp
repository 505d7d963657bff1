// One story per cause, through the real daemon as a process (issue #25): 60 keys of one host
// slow down 8% in one cycle while 2 subject keys slow down 30% against references that moved
// 8%: one incident and two alerts, in one notification, each notified once (a restart sends
// nothing again); the incident lists its members in the API and status, and acknowledging it
// acknowledges them.
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::eventually;
using testing::http;
using namespace std::chrono_literals;

constexpr const char* kToken = "incident-e2e-token-31c7";

// A schema-valid record of one run (POST requires them).
json record(const std::string& provider, const std::string& workload, core::Timestamp at,
            std::int64_t median_ns) {
  return testing::posted_record({at, median_ns, workload, provider, "incident-e2e"});
}

// The 62 keys: 29 subject/reference pairs and two more pairs ("own-0", "own-1") whose subjects
// will step 30% while their references step 8% with the other 58 keys.
struct Key {
  std::string provider;
  std::string workload;
  double step;  // relative change at the stepping cycle
};

std::vector<Key> keys() {
  std::vector<Key> out;
  for (int i = 0; i < 29; ++i) {
    out.push_back({"liger", "w" + std::to_string(i), 0.08});
    out.push_back({"torch", "w" + std::to_string(i), 0.08});
  }
  for (int i = 0; i < 2; ++i) {
    out.push_back({"liger", "own-" + std::to_string(i), 0.30});
    out.push_back({"torch", "own-" + std::to_string(i), 0.08});
  }
  return out;
}

// Cycle `c` of every key as one posted batch (c >= 10: the stepped level).
json cycle(int c, core::Timestamp start) {
  json batch = json::array();
  for (const auto& k : keys()) {
    const double level = c >= 10 ? 1 + k.step : 1;
    const double noise = 1 + 0.002 * ((c * 7 + static_cast<int>(k.workload.size())) % 5 - 2);
    const std::int64_t base = k.provider == "torch" ? 2'000'000 : 1'000'000;
    batch.push_back(record(k.provider, k.workload, start + std::chrono::hours(2 * c),
                           static_cast<std::int64_t>(static_cast<double>(base) * level * noise)));
  }
  return batch;
}

void write_config(const testing::TempDir& dir, const std::string& hook_url) {
  testing::write_file(dir / "token", std::string(kToken) + "\n");
  std::filesystem::permissions(
      dir / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const json config = {
      {"storage", {{"path", (dir / "kw.db").string()}}},
      {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir / "token").string()}}},
      {"backend", "cpu"},
      {"benchmarks", json::array()},
      {"notifiers", json::array({{{"type", "webhook"},
                                  {"name", "hook"},
                                  {"url", hook_url},
                                  {"timeout", "500ms"},
                                  {"backoff", {{"base", "50ms"}, {"cap", "200ms"}}}}})}};
  testing::write_file(dir / "kernelwatch.json", config.dump(2));
}

TEST(IncidentE2E, SixtyKeysOfAHostAndTwoOwnStepsAreOneIncidentAndTwoAlertsNotifiedOnce) {
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;
  write_config(dir, receiver.url());
  testing::DaemonChild daemon;
  daemon.start(dir / "kernelwatch.json", dir / "daemon-0.log");
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const core::Timestamp start = testing::day_before_now() - std::chrono::hours(48);

  for (int c = 0; c < 10; ++c) {
    const auto posted = http(daemon.port(), "POST", "/api/v1/runs", cycle(c, start).dump(), kToken);
    ASSERT_EQ(posted.status, 200) << posted.body;
  }
  EXPECT_EQ(receiver.snapshot().requests.size(), 0u) << "the history alone notified";
  const auto stepped = http(daemon.port(), "POST", "/api/v1/runs", cycle(10, start).dump(), kToken);
  ASSERT_EQ(stepped.status, 200) << stepped.body;
  EXPECT_TRUE(json::parse(stepped.body)["decided"].get<bool>()) << stepped.body;

  // One notification: the incident (60 members) and the two subjects' own alerts.
  ASSERT_TRUE(receiver.wait_for_requests(1)) << daemon.log();
  const json body = json::parse(receiver.snapshot().requests[0].body);
  ASSERT_EQ(body["alerts"].size(), 3u) << body.dump().substr(0, 2000);
  std::size_t incidents = 0;
  std::set<std::string> own;
  std::string incident_id;
  for (const auto& alert : body["alerts"]) {
    if (alert["kind"] == "environment") {
      ++incidents;
      EXPECT_EQ(alert["members"].size(), 60u);
      for (const auto& member : alert["members"]) {
        EXPECT_FALSE(member["key"]["workload"].get<std::string>().rfind("own-", 0) == 0 &&
                     member["key"]["provider"] == "liger")
            << member.dump();
      }
      continue;
    }
    EXPECT_EQ(alert["kind"], "step");
    EXPECT_EQ(alert["key"]["provider"], "liger");
    own.insert(alert["key"]["workload"].get<std::string>());
  }
  EXPECT_EQ(incidents, 1u);
  EXPECT_EQ(own, (std::set<std::string>{"own-0", "own-1"}));

  // The API lists three alerts; the incident carries its members, each with its own change.
  const json alerts = json::parse(http(daemon.port(), "GET", "/api/v1/alerts").body);
  ASSERT_EQ(alerts.size(), 3u) << alerts.dump().substr(0, 2000);
  for (const auto& alert : alerts) {
    if (alert["kind"] != "environment") continue;
    incident_id = alert["id"];
    ASSERT_EQ(alert["members"].size(), 60u);
    for (const auto& member : alert["members"]) {
      EXPECT_NEAR(member["relativeChange"].get<double>(), 0.08, 0.02) << member.dump();
      EXPECT_EQ(member["incident"], incident_id);
    }
  }
  ASSERT_FALSE(incident_id.empty());
  // Status: 60 keys in the incident, 2 firing; each member key knows it breached.
  const json status = json::parse(http(daemon.port(), "GET", "/api/v1/status").body);
  std::map<std::string, int> states;
  for (const auto& key : status["keys"]) ++states[key["state"].get<std::string>()];
  EXPECT_EQ(states["incident"], 60) << status["keys"].dump().substr(0, 1000);
  EXPECT_EQ(states["firing"], 2);

  // Acknowledging the incident acknowledges its members.
  const auto acked = http(daemon.port(), "POST", "/api/v1/alerts/" + incident_id + "/ack",
                          R"({"rebaseline": false})", kToken);
  ASSERT_EQ(acked.status, 200) << acked.body;
  ASSERT_TRUE(eventually([&] {
    const json s = json::parse(http(daemon.port(), "GET", "/api/v1/status").body);
    int ack = 0;
    for (const auto& key : s["keys"]) ack += key["state"] == "acknowledged" ? 1 : 0;
    return ack == 60;
  }));

  // A restart notifies nothing again: after it, a quiet cycle is decided and sends nothing.
  daemon.stop();
  daemon.start(dir / "kernelwatch.json", dir / "daemon-1.log");
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto quiet = http(daemon.port(), "POST", "/api/v1/runs", cycle(11, start).dump(), kToken);
  ASSERT_EQ(quiet.status, 200) << quiet.body;
  EXPECT_TRUE(json::parse(quiet.body)["decided"].get<bool>()) << quiet.body;
  json after;
  ASSERT_TRUE(eventually([&] {
    after = json::parse(http(daemon.port(), "GET", "/api/v1/status").body);
    return after["outbox"].size() == 1 && after["outbox"][0]["pending"] == 0;
  })) << after.dump().substr(0, 500);
  EXPECT_EQ(after["outbox"][0]["delivered"], 1);
  EXPECT_EQ(receiver.snapshot().requests.size(), 1u);
  std::map<std::string, int> after_states;
  for (const auto& key : after["keys"]) ++after_states[key["state"].get<std::string>()];
  EXPECT_EQ(after_states["acknowledged"], 60);
  EXPECT_EQ(after_states["firing"], 2);
  daemon.stop();
}

}  // namespace
}  // namespace kernelwatch
