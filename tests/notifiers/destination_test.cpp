#include "notifiers/destination.hpp"
#include "notifiers/integration.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::notifiers {
namespace {

TEST(Redact, KeepsSchemeHostAndPortOnly) {
  EXPECT_EQ(redact("https://hooks.slack.com/services/T000/B000/XXXXSECRET"),
            "https://hooks.slack.com:443");
  EXPECT_EQ(redact("http://user:pass@127.0.0.1:8080/hook?token=abc#frag"), "http://127.0.0.1:8080");
  EXPECT_EQ(redact("https://[::1]:9093/api/v2/alerts"), "https://[::1]:9093");
  EXPECT_EQ(redact("HTTPS://Example.ORG?secret=1"), "https://example.org:443");
  EXPECT_EQ(redact("not a url with /secret/path"), "<invalid url>");
}

Destination destination(std::string url) {
  Destination d;
  d.name = "hook";
  d.url = std::move(url);
  return d;
}

TEST(Validate, PlainHttpOnlyForLoopbackOrWhenAllowed) {
  EXPECT_TRUE(validate(destination("http://127.0.0.1:9000/x")));
  EXPECT_TRUE(validate(destination("http://localhost/x")));
  EXPECT_TRUE(validate(destination("https://example.org/x")));
  auto refused = validate(destination("http://example.org/hooks/secret-token"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("http://example.org:80"), std::string::npos);
  EXPECT_EQ(refused.error().message.find("secret-token"), std::string::npos);
  auto allowed = destination("http://example.org/x");
  allowed.insecure_http = InsecureHttp::Allow;
  EXPECT_TRUE(validate(allowed));
}

TEST(Validate, LoopbackMeansAnAddressNotANameThatLooksLikeOne) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.10.0.3"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("127.evil.example"));
  EXPECT_FALSE(is_loopback_host("128.0.0.1"));
  EXPECT_FALSE(validate(destination("http://127.evil.example/hook")));
}

TEST(Validate, RejectsBadTimeoutsAndBackoff) {
  auto d = destination("https://example.org/x");
  d.timeouts.read = std::chrono::milliseconds(0);
  EXPECT_FALSE(validate(d));
  d = destination("https://example.org/x");
  d.backoff.cap = std::chrono::milliseconds(1);
  EXPECT_FALSE(validate(d));
  d = destination("https://example.org/x");
  d.name.clear();
  EXPECT_FALSE(validate(d));
}

TEST(Pacing, SlackDefaultsToOneMessagePerSecond) {
  Destination slack = destination("https://hooks.slack.com/x");
  slack.type = "slack";
  EXPECT_EQ(effective_min_interval(slack), std::chrono::seconds(1));
  EXPECT_EQ(effective_min_interval(destination("https://e.org/")), std::chrono::milliseconds(0));
  slack.min_interval = std::chrono::milliseconds(250);
  EXPECT_EQ(effective_min_interval(slack), std::chrono::milliseconds(250));
}

TEST(Integrations, EachRegisteredOneIsFoundByItsName) {
  ASSERT_FALSE(integrations().empty());
  for (const Integration* integration : integrations()) {
    EXPECT_EQ(find_integration(integration->name()), integration);
    EXPECT_EQ(*parse_destination_type(integration->name()), integration->name());
  }
  EXPECT_EQ(find_integration("alertmanager")->name(), "alertmanager");
  const auto email = parse_destination_type("email");
  ASSERT_FALSE(email);
  EXPECT_EQ(email.error().message,
            "unknown destination type \"email\" (known: slack, webhook, alertmanager, ntfy)");
  Destination unknown;
  unknown.name = "x";
  unknown.url = "https://e.org/";
  unknown.type = "email";
  EXPECT_FALSE(validate(unknown));
}

}  // namespace
}  // namespace kernelwatch::notifiers
