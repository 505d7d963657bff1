#include "http/prometheus.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace kernelwatch::http {
namespace {

TEST(PrometheusText, WritesHelpTypeAndLabelledSamples) {
  PrometheusText text;
  text.family("kernelwatch_runs_total", MetricType::Counter, "Runs recorded, by status.")
      .sample({{"status", "ok"}}, 12)
      .sample({{"status", "failed"}}, 0);
  text.family("kernelwatch_outbox_depth", MetricType::Gauge, "Undelivered notifications.")
      .sample(3);
  auto body = text.render();
  ASSERT_TRUE(body) << body.error().message;
  EXPECT_EQ(*body,
            "# HELP kernelwatch_runs_total Runs recorded, by status.\n"
            "# TYPE kernelwatch_runs_total counter\n"
            "kernelwatch_runs_total{status=\"ok\"} 12\n"
            "kernelwatch_runs_total{status=\"failed\"} 0\n"
            "# HELP kernelwatch_outbox_depth Undelivered notifications.\n"
            "# TYPE kernelwatch_outbox_depth gauge\n"
            "kernelwatch_outbox_depth 3\n");
  EXPECT_EQ(kPrometheusContentType, "text/plain; version=0.0.4; charset=utf-8");
}

TEST(PrometheusText, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escape_label_value("tvd/backward"), "tvd/backward");
  PrometheusText text;
  text.family("m", MetricType::Gauge, "line one\nback\\slash \"quoted\"")
      .sample({{"key", "x\"y\\z\nw"}, {"b", ""}}, 1.5);
  auto body = text.render();
  ASSERT_TRUE(body) << body.error().message;
  EXPECT_EQ(*body,
            "# HELP m line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE m gauge\n"
            "m{key=\"x\\\"y\\\\z\\nw\",b=\"\"} 1.5\n");
}

TEST(PrometheusText, FormatsNumbersPrometheusCanParse) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(-0.0), "0");
  EXPECT_EQ(format_metric_value(42), "42");
  EXPECT_EQ(format_metric_value(-7), "-7");
  EXPECT_EQ(format_metric_value(1e15), "1000000000000000");
  EXPECT_EQ(format_metric_value(9007199254740991.0), "9007199254740991");
  EXPECT_EQ(format_metric_value(0.5), "0.5");
  EXPECT_EQ(format_metric_value(0.000123456), "0.000123456");
  EXPECT_EQ(format_metric_value(1.25e-9), "1.25e-09");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-Inf");
  // Round trip: what we print reads back as the same double.
  for (const double value : {0.1, 1.0 / 3.0, 123456.789, 2.5e-7, 1e300, 9007199254740993.0 * 2}) {
    EXPECT_EQ(std::stod(format_metric_value(value)), value) << format_metric_value(value);
  }
}

TEST(PrometheusText, ValidatesNames) {
  EXPECT_TRUE(is_valid_metric_name("kernelwatch_run_duration_seconds"));
  EXPECT_TRUE(is_valid_metric_name("job:rate5m"));
  EXPECT_TRUE(is_valid_metric_name("_x"));
  EXPECT_FALSE(is_valid_metric_name(""));
  EXPECT_FALSE(is_valid_metric_name("9lives"));
  EXPECT_FALSE(is_valid_metric_name("bad-name"));
  EXPECT_FALSE(is_valid_metric_name("space name"));
  EXPECT_TRUE(is_valid_label_name("benchmark"));
  EXPECT_TRUE(is_valid_label_name("_private"));
  EXPECT_FALSE(is_valid_label_name("__reserved"));
  EXPECT_FALSE(is_valid_label_name("a:b"));
  EXPECT_FALSE(is_valid_label_name("1st"));
  EXPECT_FALSE(is_valid_label_name(""));
}

TEST(PrometheusText, ReportsTheFirstMistake) {
  {
    PrometheusText text;
    text.family("bad-name", MetricType::Gauge, "h").sample(1);
    auto body = text.render();
    ASSERT_FALSE(body);
    EXPECT_EQ(body.error().code, core::ErrorCode::InvalidArgument);
    EXPECT_NE(body.error().message.find("bad-name"), std::string::npos) << body.error().message;
  }
  {
    PrometheusText text;
    text.family("m", MetricType::Gauge, "h").sample({{"bad label", "v"}}, 1);
    auto body = text.render();
    ASSERT_FALSE(body);
    EXPECT_NE(body.error().message.find("bad label"), std::string::npos);
  }
  {
    PrometheusText text;
    text.family("m", MetricType::Gauge, "h").sample({{"a", "1"}}, 1).sample({{"a", "1"}}, 2);
    EXPECT_FALSE(text.render());
  }
  {
    PrometheusText text;
    text.family("m", MetricType::Gauge, "h").sample({{"a", "1"}, {"a", "2"}}, 1);
    EXPECT_FALSE(text.render());
  }
  {
    PrometheusText text;
    text.family("m", MetricType::Gauge, "h");
    text.family("m", MetricType::Counter, "h");
    EXPECT_FALSE(text.render());
  }
  {
    PrometheusText text;
    text.family("m_total", MetricType::Counter, "h").sample(-1);
    EXPECT_FALSE(text.render());
  }
  {
    PrometheusText text;
    text.family("h", MetricType::Histogram, "h").sample(1);
    EXPECT_FALSE(text.render());
  }
}

TEST(PrometheusText, SameLabelsInAnotherOrderAreADuplicate) {
  PrometheusText text;
  text.family("m", MetricType::Gauge, "h")
      .sample({{"a", "1"}, {"b", "2"}}, 1)
      .sample({{"b", "2"}, {"a", "1"}}, 2);
  EXPECT_FALSE(text.render());
}

TEST(PrometheusText, WritesHistograms) {
  PrometheusText text;
  const HistogramBucket buckets[] = {{0.001, 2}, {0.01, 5}, {0.1, 9}};
  text.family("kernelwatch_run_duration_seconds", MetricType::Histogram, "Run durations.")
      .histogram({{"benchmark", "tvd/forward"}}, buckets, 0.25, 10);
  auto body = text.render();
  ASSERT_TRUE(body) << body.error().message;
  EXPECT_EQ(*body,
            "# HELP kernelwatch_run_duration_seconds Run durations.\n"
            "# TYPE kernelwatch_run_duration_seconds histogram\n"
            "kernelwatch_run_duration_seconds_bucket{benchmark=\"tvd/forward\",le=\"0.001\"} 2\n"
            "kernelwatch_run_duration_seconds_bucket{benchmark=\"tvd/forward\",le=\"0.01\"} 5\n"
            "kernelwatch_run_duration_seconds_bucket{benchmark=\"tvd/forward\",le=\"0.1\"} 9\n"
            "kernelwatch_run_duration_seconds_bucket{benchmark=\"tvd/forward\",le=\"+Inf\"} 10\n"
            "kernelwatch_run_duration_seconds_sum{benchmark=\"tvd/forward\"} 0.25\n"
            "kernelwatch_run_duration_seconds_count{benchmark=\"tvd/forward\"} 10\n");
}

TEST(PrometheusText, RejectsBadHistograms) {
  {
    PrometheusText text;
    const HistogramBucket decreasing[] = {{0.1, 2}, {0.01, 5}};
    text.family("h", MetricType::Histogram, "h").histogram({}, decreasing, 1, 5);
    EXPECT_FALSE(text.render());
  }
  {
    PrometheusText text;
    const HistogramBucket shrinking_counts[] = {{0.01, 5}, {0.1, 2}};
    text.family("h", MetricType::Histogram, "h").histogram({}, shrinking_counts, 1, 5);
    EXPECT_FALSE(text.render());
  }
  {
    PrometheusText text;
    const HistogramBucket ok[] = {{1, 1}};
    text.family("h", MetricType::Histogram, "h").histogram({{"le", "1"}}, ok, 1, 1);
    EXPECT_FALSE(text.render());
  }
  {
    PrometheusText text;
    text.family("g", MetricType::Gauge, "h").histogram({}, {}, 0, 0);
    EXPECT_FALSE(text.render());
  }
}

TEST(PrometheusText, EmptyFamilyStillDeclaresItself) {
  PrometheusText text;
  text.family("kernelwatch_alerts", MetricType::Gauge, "Open alerts by state.");
  auto body = text.render();
  ASSERT_TRUE(body);
  EXPECT_EQ(*body,
            "# HELP kernelwatch_alerts Open alerts by state.\n"
            "# TYPE kernelwatch_alerts gauge\n");
}

}  // namespace
}  // namespace kernelwatch::http
