#include "notifiers/retry.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::notifiers {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

core::Timestamp at(long long s) {
  return core::Timestamp(seconds(s));
}

TEST(Classify, SuccessTransientAndPermanent) {
  const auto now = at(1000);
  EXPECT_EQ(classify(integration_named("webhook"), {200, "", ""}, now).verdict, Verdict::Delivered);
  EXPECT_EQ(classify(integration_named("webhook"), {204, "", ""}, now).verdict, Verdict::Delivered);
  EXPECT_EQ(classify(integration_named("webhook"), {500, "", ""}, now).verdict, Verdict::Transient);
  EXPECT_EQ(classify(integration_named("webhook"), {503, "", ""}, now).verdict, Verdict::Transient);
  EXPECT_EQ(classify(integration_named("webhook"), {408, "", ""}, now).verdict, Verdict::Transient);
  EXPECT_EQ(classify(integration_named("webhook"), {429, "", ""}, now).verdict, Verdict::Transient);
  EXPECT_EQ(classify(integration_named("webhook"), {400, "", ""}, now).verdict, Verdict::Permanent);
  EXPECT_EQ(classify(integration_named("webhook"), {401, "", ""}, now).verdict, Verdict::Permanent);
  EXPECT_EQ(classify(integration_named("webhook"), {404, "", ""}, now).verdict, Verdict::Permanent);
  EXPECT_EQ(classify(integration_named("webhook"), {301, "", ""}, now).verdict, Verdict::Permanent);
}

TEST(Classify, SlackErrorTokensArePermanentWithTheirName) {
  const auto now = at(1000);
  for (const char* token :
       {"invalid_payload", "no_service", "channel_not_found", "channel_is_archived"}) {
    auto c = classify(integration_named("slack"), {400, token, ""}, now);
    EXPECT_EQ(c.verdict, Verdict::Permanent) << token;
    EXPECT_NE(c.reason.find(token), std::string::npos);
  }
  // Slack's 5xx is still transient; an unrelated body on another destination means nothing.
  EXPECT_EQ(classify(integration_named("slack"), {500, "rollup_error", ""}, now).verdict,
            Verdict::Transient);
  EXPECT_EQ(classify(integration_named("webhook"), {200, "no_service", ""}, now).verdict,
            Verdict::Delivered);
}

TEST(Classify, ReasonNeverCarriesTheBody) {
  auto c =
      classify(integration_named("webhook"), {404, "Cannot POST /hooks/secret-token", ""}, at(0));
  EXPECT_EQ(c.reason, "HTTP 404");
}

TEST(RetryAfter, SecondsAndHttpDates) {
  const auto now = *core::parse_timestamp("2015-10-21T07:27:00Z");
  EXPECT_EQ(parse_retry_after("120", now), seconds(120));
  EXPECT_EQ(parse_retry_after(" 0 ", now), seconds(0));
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), seconds(60));
  EXPECT_EQ(parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now), seconds(60));
  EXPECT_EQ(parse_retry_after("Wed Oct 21 07:28:00 2015", now), seconds(60));
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), milliseconds(0));
  EXPECT_FALSE(parse_retry_after("soon", now));
  EXPECT_FALSE(parse_retry_after("", now));
  EXPECT_FALSE(parse_retry_after("Wed, 32 Oct 2015 07:28:00 GMT", now));
  auto c = classify(integration_named("webhook"), {429, "", "7"}, now);
  EXPECT_EQ(c.retry_after, seconds(7));
}

TEST(Backoff, GrowsExponentiallyWithinJitterAndCap) {
  const Backoff b{milliseconds(100), milliseconds(1000), std::chrono::hours(1)};
  std::mt19937_64 rng(42);
  for (int attempt = 1; attempt <= 8; ++attempt) {
    const long long full = std::min(100LL << (attempt - 1), 1000LL);
    for (int i = 0; i < 50; ++i) {
      const auto d = backoff_delay(b, attempt, rng).count();
      EXPECT_GE(d, full / 2) << attempt;
      EXPECT_LE(d, full) << attempt;
    }
  }
  // The same seed gives the same schedule.
  std::mt19937_64 a(7), c(7);
  for (int attempt = 1; attempt < 6; ++attempt) {
    EXPECT_EQ(backoff_delay(b, attempt, a), backoff_delay(b, attempt, c));
  }
  // Absurd attempt counts stay at the cap.
  EXPECT_LE(backoff_delay(b, 1'000'000, rng), milliseconds(1000));
}

TEST(Decide, RetriesThenGivesUpAtMaxAge) {
  const Backoff b{seconds(10), seconds(60), seconds(300)};
  std::mt19937_64 rng(1);
  const Classification transient{Verdict::Transient, std::nullopt, "HTTP 503"};
  auto d = decide(b, transient, 1, at(0), at(5), rng);
  EXPECT_EQ(d.kind, Decision::Kind::RetryAt);
  EXPECT_GE(d.at, at(10));
  EXPECT_LE(d.at, at(15));
  EXPECT_EQ(d.message, "HTTP 503");
  auto late = decide(b, transient, 9, at(0), at(290), rng);
  EXPECT_EQ(late.kind, Decision::Kind::Dead);
  EXPECT_NE(late.message.find("maximum age"), std::string::npos);
  EXPECT_NE(late.message.find("HTTP 503"), std::string::npos);
}

TEST(Decide, RetryAfterWinsButNeverBelowTheBase) {
  const Backoff b{seconds(2), seconds(60), std::chrono::hours(1)};
  std::mt19937_64 rng(1);
  auto d = decide(b, {Verdict::Transient, seconds(30), "HTTP 429"}, 1, at(0), at(0), rng);
  EXPECT_EQ(d.at, at(30));
  auto zero = decide(b, {Verdict::Transient, seconds(0), "HTTP 429"}, 1, at(0), at(0), rng);
  EXPECT_EQ(zero.at, at(2));
  auto beyond =
      decide(b, {Verdict::Transient, std::chrono::hours(2), "HTTP 429"}, 1, at(0), at(0), rng);
  EXPECT_EQ(beyond.kind, Decision::Kind::Dead);
}

TEST(Decide, PermanentIsDeadAtOnceAndSuccessIsDelivered) {
  const Backoff b{};
  std::mt19937_64 rng(1);
  auto dead = decide(b, {Verdict::Permanent, std::nullopt, "HTTP 404 channel_not_found"}, 1, at(0),
                     at(1), rng);
  EXPECT_EQ(dead.kind, Decision::Kind::Dead);
  EXPECT_EQ(dead.message, "permanent failure: HTTP 404 channel_not_found");
  auto ok = decide(b, {Verdict::Delivered, std::nullopt, "HTTP 200"}, 1, at(0), at(1), rng);
  EXPECT_EQ(ok.kind, Decision::Kind::Delivered);
}

}  // namespace
}  // namespace kernelwatch::notifiers
