#include "config/duration.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace kernelwatch::config {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, AcceptsEveryUnitAndDecimals) {
  const struct {
    const char* text;
    milliseconds expected;
  } cases[] = {
      {"0s", milliseconds(0)},           {"250ms", milliseconds(250)},
      {"30s", milliseconds(30'000)},     {"15m", milliseconds(15 * 60'000)},
      {"1h", milliseconds(3'600'000)},   {"1d", milliseconds(86'400'000)},
      {"1.5h", milliseconds(5'400'000)}, {"0.5s", milliseconds(500)},
      {"2.25m", milliseconds(135'000)},  {"0.001s", milliseconds(1)},
      {"24h", milliseconds(86'400'000)},
  };
  for (const auto& c : cases) {
    const auto parsed = parse_duration(c.text);
    ASSERT_TRUE(parsed.has_value()) << c.text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, c.expected) << c.text;
  }
}

TEST(ParseDuration, RejectsMalformedText) {
  for (const char* text : {"", "15", "-1m", "15 min", "15min", " 15m", "15m ", "m", ".5s", "1.s",
                           "1e3s", "15M", "1,5h", "+1m", "15mm", "0x10s"}) {
    const auto parsed = parse_duration(text);
    ASSERT_FALSE(parsed.has_value()) << '"' << text << '"';
    EXPECT_EQ(parsed.error().code, core::ErrorCode::ParseError);
    EXPECT_EQ(parsed.error().message,
              "\"" + std::string(text) + "\" is not a duration like \"15m\" or \"30s\"");
  }
}

TEST(ParseDuration, RejectsFractionsOfAMillisecondAndTooManyDigits) {
  auto parsed = parse_duration("1.5ms");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().message,
            "\"1.5ms\" is not a duration like \"15m\" or \"30s\" (not a whole number of "
            "milliseconds)");
  parsed = parse_duration("1.0000000001s");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().message,
            "\"1.0000000001s\" is not a duration like \"15m\" or \"30s\" (at most 9 decimal "
            "places)");
}

TEST(ParseDuration, RejectsOverflow) {
  for (const char* text : {"99999999999999999999d", "106751991168d", "9223372036854775808ms"}) {
    const auto parsed = parse_duration(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().message, "\"" + std::string(text) + "\" is too long a duration");
  }
  ASSERT_TRUE(parse_duration("106751991167d").has_value());
  const auto largest = parse_duration("9223372036854775807ms");
  ASSERT_TRUE(largest.has_value());
  EXPECT_EQ(largest->count(), 9223372036854775807LL);
}

TEST(FormatDuration, UsesTheLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(format_duration(milliseconds(0)), "0s");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(milliseconds(90'000)), "90s");
  EXPECT_EQ(format_duration(std::chrono::minutes(15)), "15m");
  EXPECT_EQ(format_duration(std::chrono::minutes(90)), "90m");
  EXPECT_EQ(format_duration(std::chrono::hours(24)), "1d");
  EXPECT_EQ(format_duration(std::chrono::hours(36)), "36h");
  for (const long long ms : {0LL, 1LL, 999LL, 1000LL, 61'000LL, 3'600'000LL, 5'400'000LL,
                             86'400'000LL * 7, 123'456'789LL}) {
    const auto parsed = parse_duration(format_duration(milliseconds(ms)));
    ASSERT_TRUE(parsed.has_value()) << ms;
    EXPECT_EQ(parsed->count(), ms);
  }
}

}  // namespace
}  // namespace kernelwatch::config
