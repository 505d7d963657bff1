// A young key through the real daemon (issue #36): runs posted to POST /api/v1/runs of a key of
// one host are judged from their own evidence, so a +25% step of a 9.6 us kernel alerts at its
// sixth run with a band that is a sensible range; the same runs from Liger's CI (several hosts
// behind one GPU name) keep the 50 us cross-host prior and do not.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/daemon/support/daemon_process.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::http;
using namespace daemon_e2e;

// Run i of a 9.6 us key with 0.5% noise (deterministic), observed i minutes into the day before.
json young_run(int i, std::int64_t median_ns, const std::string& workload,
               const std::string& source) {
  return testing::posted_record(
      {testing::day_before_now() + std::chrono::minutes(i), median_ns, workload, "posted", source});
}

std::int64_t quiet(int i) {
  return 9'600 + static_cast<std::int64_t>(48 * std::sin(i * 1.7));
}

// Posts six runs of a key and then one 25% slower; returns the answer for the slow run.
json post_step(std::uint16_t port, const std::string& workload, const std::string& source) {
  json batch = json::array();
  for (int i = 0; i < 6; ++i) batch.push_back(young_run(i, quiet(i), workload, source));
  const auto stored = http(port, "POST", "/api/v1/runs", batch.dump(), kToken);
  EXPECT_EQ(stored.status, 200) << stored.body;
  const auto step =
      http(port, "POST", "/api/v1/runs", young_run(6, 12'000, workload, source).dump(), kToken);
  EXPECT_EQ(step.status, 200) << step.body;
  return json::parse(step.body)["runs"][0];
}

TEST(YoungKeyE2E, AKeyOfOneHostAlertsAtTwentyFivePercentAndLigersCiHistoryKeepsItsPrior) {
  testing::TempDir dir;
  notifiers::testing::TestReceiver receiver;
  DaemonProcess daemon(dir, receiver.url());
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();

  const json one_host = post_step(daemon.port(), "young-one-host", "e2e-test");
  EXPECT_EQ(one_host["verdict"], "regression") << one_host.dump();
  EXPECT_EQ(one_host["fired"].size(), 1u) << one_host.dump();
  const std::string explanation = one_host["explanation"];
  EXPECT_NE(explanation.find("young key of one host"), std::string::npos) << explanation;

  // The band it was judged by: positive, and narrower than the step on both sides.
  const auto alerts = json::parse(http(daemon.port(), "GET", "/api/v1/alerts?state=firing").body);
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump();
  const auto& band = alerts[0]["band"];
  const double center = band["center"].get<double>();
  EXPECT_GT(band["lower"].get<double>(), 0.9 * center) << alerts.dump();
  EXPECT_LT(band["upper"].get<double>(), 1.1 * center) << alerts.dump();

  // Liger's CI: the same medians keep the cross-host prior (50 us of 9.6 us) and stay young.
  const json ci = post_step(daemon.port(), "young-liger-ci", "liger-kernel-bench");
  EXPECT_NE(ci["verdict"], "regression") << ci.dump();
  EXPECT_TRUE(ci["fired"].empty()) << ci.dump();
  daemon.stop();
}

}  // namespace
}  // namespace kernelwatch
