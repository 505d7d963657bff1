#include "core/time.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

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

// The formats are written without printf (a replay formats numbers for every run); they must
// read exactly as printf's "%.Nf" would, rounding included, for any value.
TEST(FormatLatency, ReadsExactlyAsPrintfWouldForAnyValue) {
  const auto printf_of = [](const char* format, auto... values) {
    char text[512];
    std::snprintf(text, sizeof text, format, values...);
    return std::string(text);
  };
  const auto printf_latency = [&](double ns) {
    const double m = std::fabs(ns);
    if (m < 1e3) return printf_of("%.0f ns", ns);
    const char* unit = m >= 1e9 ? "s" : m >= 1e6 ? "ms" : "us";
    const double value = ns / (m >= 1e9 ? 1e9 : m >= 1e6 ? 1e6 : 1e3);
    const double a = std::fabs(value);
    return printf_of("%.*f %s", a >= 100 ? 1 : a >= 10 ? 2 : 3, value, unit);
  };
  std::vector<double> values = {0.0,    -0.0,      0.5,   1.5,    2.5,   999.5,  999.4999,
                                1e3,    99.95e3,   9.9995e6, 1.0005e9, 1e300, -1e300,
                                0.0005, -0.00049,  0.05,  -0.05,  0.15,  0.25,   0.35,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN()};
  std::mt19937_64 random(20261201);
  std::uniform_real_distribution<double> exponent(-3, 12);
  for (int i = 0; i < 20000; ++i) {
    const double v = std::pow(10.0, exponent(random)) * (i % 2 == 0 ? 1 : -1);
    values.push_back(v);
    values.push_back(std::round(v));  // whole nanoseconds, as stored
  }
  for (int i = 0; i < 20000; ++i) {  // decimal ties and near-ties of every format's last digit
    values.push_back(i * 0.5);
    values.push_back(i * 50.5);
    values.push_back(i * 500.5 + 1e6);
    values.push_back(i * 0.0005);
    values.push_back(-i * 0.00005);
  }
  for (const double v : values) {
    EXPECT_EQ(format_latency(v), printf_latency(v)) << v;
    EXPECT_EQ(format_change(v / 100), printf_of("%+.1f%%", v / 100 * 100)) << v;
    EXPECT_EQ(format_share(v / 100), printf_of("%.1f%%", std::fabs(v / 100) * 100)) << v;
  }
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
