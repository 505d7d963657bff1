// ntfy: the JSON a notification is published as, where it posts, and what a destination of the
// type must and may configure. The shape is ntfy's JSON publishing (docs.ntfy.sh/publish: a POST
// to the server's root with "topic", "title", "message", "priority" 1-5, "tags", "click").
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "notifiers/integration.hpp"
#include "tests/notifiers/support/samples.hpp"

namespace kernelwatch::notifiers {
namespace {

using nlohmann::json;
using testing::sample_alert;
using testing::sample_notification;

Destination ntfy(std::string url) {
  Destination d;
  d.type = "ntfy";
  d.name = "phone";
  d.url = std::move(url);
  return d;
}

json published(const Destination& d, const Notification& n, const FormatOptions& options = {}) {
  return json::parse(build_request(d, n, options, n.created_at).body);
}

TEST(Ntfy, ARegressionIsPublishedToItsTopicWithHighPriority) {
  const json body =
      published(ntfy("https://ntfy.example.org/kw-alerts"), sample_notification("a", 1));
  EXPECT_EQ(body["topic"], "kw-alerts");
  EXPECT_EQ(body["priority"], 4);
  EXPECT_EQ(body["title"], "kernelwatch on gpu-host-1: 1 regression");
  const std::string message = body["message"];
  EXPECT_NE(message.find("Regression (kernel step): layer_norm/backward · liger"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("median 1.234 ms (+8.1%)"), std::string::npos) << message;
  EXPECT_NE(message.find("0.6.1"), std::string::npos) << "the attribution: " << message;
  EXPECT_EQ(body["tags"], json::array({"rotating_light", "kernelwatch"}));
  EXPECT_FALSE(body.contains("click")) << "no public_url, no link";
}

TEST(Ntfy, AResolveAloneIsLowPriorityAndATapOpensTheAlertsPage) {
  Notification n = sample_notification("r", 0);
  n.alerts.push_back(sample_alert(3, Notice::Resolved));
  FormatOptions options;
  options.public_url = "https://kw.example.org/";
  const json body = published(ntfy("https://ntfy.sh/kw"), n, options);
  EXPECT_EQ(body["priority"], 2);
  EXPECT_EQ(body["tags"], json::array({"white_check_mark", "kernelwatch"}));
  EXPECT_EQ(body["click"],
            "https://kw.example.org/alerts/" + core::AlertId("alert-3").short_form());
  // Several alerts: the status page.
  n.alerts.push_back(sample_alert(4));
  EXPECT_EQ(published(ntfy("https://ntfy.sh/kw"), n, options)["click"], "https://kw.example.org");
}

TEST(Ntfy, AHundredAlertsStayWithinNtfysMessageSize) {
  const json body = published(ntfy("https://ntfy.sh/kw"), sample_notification("big", 100));
  const std::string message = body["message"];
  EXPECT_LE(message.size(), 4096U);
  EXPECT_NE(message.find("…and 90 more"), std::string::npos) << message;
  EXPECT_EQ(body["title"], "kernelwatch on gpu-host-1: 100 regressions");
}

TEST(Ntfy, ItPostsToTheServersRootAndATokenIsABearerHeader) {
  const Integration& integration = integration_named("ntfy");
  EXPECT_EQ(integration.endpoint(*core::parse_url("https://ntfy.sh/kw-alerts")).target, "/");
  // A server behind a path prefix: its root is the prefix.
  EXPECT_EQ(integration.endpoint(*core::parse_url("https://example.org/ntfy/kw/")).target,
            "/ntfy/");
  Destination d = ntfy("https://ntfy.sh/kw");
  for (const auto& [name, value] : build_request(d, sample_notification("a"), {}, {}).headers) {
    EXPECT_NE(name, "Authorization") << "anonymous without a token";
  }
  d.secret = "tk_0123456789abcdef";
  const auto request = build_request(d, sample_notification("a"), {}, {});
  const std::map<std::string, std::string> headers(request.headers.begin(), request.headers.end());
  EXPECT_EQ(headers.at("Authorization"), "Bearer tk_0123456789abcdef");
  EXPECT_EQ(headers.at("Content-Type"), "application/json");
  EXPECT_EQ(request.body.find("tk_0123456789abcdef"), std::string::npos);
}

TEST(Ntfy, AUrlWithoutATopicIsRefusedWithoutShowingIt) {
  const std::vector<std::string> urls{"https://ntfy.sh/", "https://ntfy.sh",
                                      "https://ntfy.sh/kw?auth=secret-93", "https://ntfy.sh/a.b",
                                      "https://ntfy.sh/" + std::string(65, 'a')};
  for (const std::string& url : urls) {
    const auto status = validate(ntfy(url));
    ASSERT_FALSE(status) << url;
    EXPECT_NE(status.error().message.find("https://HOST/TOPIC"), std::string::npos)
        << status.error().message;
    EXPECT_EQ(status.error().message.find("secret-93"), std::string::npos);
  }
  EXPECT_TRUE(validate(ntfy("https://ntfy.sh/kw_alerts-2")));
}

TEST(Integrations, OnlyTheTypesThatTakeASecretAcceptOne) {
  Destination slack = ntfy("https://hooks.slack.com/services/T/B/X");
  slack.type = "slack";
  slack.secret = "k";
  const auto refused = validate(slack);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("only webhook or ntfy destinations take a secret"),
            std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace kernelwatch::notifiers
