#include "core/time.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

TEST(TimeTest, ParsesAndFormatsRfc3339) {
  auto t = parse_timestamp("2025-07-17T18:18:16.000Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->time_since_epoch().count(), 1752776296LL * 1'000'000'000LL);
  EXPECT_EQ(format_timestamp(*t), "2025-07-17T18:18:16.000Z");
  EXPECT_EQ(format_id_timestamp(*t), "2025-07-17-18-18-16");

  auto fine = parse_timestamp("2025-07-17T18:18:16.123456789Z");
  ASSERT_TRUE(fine);
  EXPECT_EQ(format_timestamp(*fine), "2025-07-17T18:18:16.123456789Z");
  EXPECT_EQ(*parse_timestamp("2025-07-17T18:18:16Z"), *t);
  EXPECT_EQ(*parse_timestamp("2025-07-17T20:18:16+02:00"), *t);
  EXPECT_EQ(*parse_timestamp("2025-07-17T17:18:16-01:00"), *t);
}

TEST(TimeTest, NaiveCsvTimestampIsUtc) {
  auto t = parse_naive_timestamp("2025-07-17 18:18:16");
  ASSERT_TRUE(t);
  EXPECT_EQ(format_timestamp(*t), "2025-07-17T18:18:16.000Z");
}

TEST(TimeTest, RejectsMalformed) {
  for (const char* text :
       {"", "2025-07-17", "2025-13-01T00:00:00Z", "2025-02-30T00:00:00Z", "2025-07-17T18:18:16",
        "2025-07-17T18:18:16.Z", "2025-07-17T25:00:00Z", "2025-07-17T18:18:16Zjunk"}) {
    EXPECT_FALSE(parse_timestamp(text)) << text;
  }
  EXPECT_FALSE(parse_naive_timestamp("2025-07-17T18:18:16"));
  EXPECT_FALSE(parse_naive_timestamp("2025-07-17 18:18"));
}

// The one readable form of a latency (was three: the CLI's, the verdicts' and Slack's).
TEST(FormatLatency, FourSignificantDigitsInAReadableUnit) {
  using std::chrono::nanoseconds;
  EXPECT_EQ(format_latency(nanoseconds{812}), "812 ns");
  EXPECT_EQ(format_latency(nanoseconds{950}), "950 ns");
  EXPECT_EQ(format_latency(nanoseconds{577060}), "577.1 us");
  EXPECT_EQ(format_latency(nanoseconds{577632}), "577.6 us");
  EXPECT_EQ(format_latency(nanoseconds{812'500}), "812.5 us");
  EXPECT_EQ(format_latency(nanoseconds{1'234'567}), "1.235 ms");
  EXPECT_EQ(format_latency(nanoseconds{23379841}), "23.38 ms");
  EXPECT_EQ(format_latency(nanoseconds{23434100}), "23.43 ms");
  EXPECT_EQ(format_latency(nanoseconds{2'500'000'000}), "2.500 s");
  EXPECT_EQ(format_latency(-1'500'000.0), "-1.500 ms");  // a drift's slope may fall
}

// 64-bit nanoseconds hold 1677-09-21 to 2262-04-11: whole years inside are accepted and read
// back exactly; anything outside is refused, never wrapped (9999-12-31 once became 1816-03-29).
TEST(Time, TimestampsOutsideTheRepresentableYearsAreRefused) {
  for (const char* text : {"1678-01-01T00:00:00.000Z", "2261-12-31T23:59:59.999999999Z"}) {
    const auto t = parse_timestamp(text);
    ASSERT_TRUE(t.has_value()) << text;
    EXPECT_EQ(format_timestamp(*t), text);
  }
  for (const char* text : {"9999-12-31T00:00:00Z", "2262-01-01T00:00:00Z", "1677-12-31T23:59:59Z",
                           "0000-01-01T00:00:00Z"}) {
    const auto t = parse_timestamp(text);
    ASSERT_FALSE(t.has_value()) << text << " -> " << format_timestamp(*t);
    EXPECT_NE(t.error().message.find("outside the years 1678 to 2261"), std::string::npos);
  }
  EXPECT_FALSE(parse_naive_timestamp("9999-12-31 00:00:00").has_value());
  EXPECT_TRUE(parse_naive_timestamp("2261-12-31 23:59:59").has_value());
}

}  // namespace
}  // namespace kernelwatch::core
