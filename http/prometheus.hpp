// Builder for the Prometheus text exposition format 0.0.4 (what GET /metrics answers): metric
// families with HELP and TYPE, labelled samples, histograms, number formatting. Pure C++, no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace kernelwatch::http {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { Counter, Gauge, Histogram, Untyped };

// Label name and value pairs in the order they are written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// One histogram bucket: the count of observations <= upper_bound (cumulative).
struct HistogramBucket {
  double upper_bound = 0;
  std::uint64_t cumulative_count = 0;
};

// [a-zA-Z_:][a-zA-Z0-9_:]*
[[nodiscard]] bool is_valid_metric_name(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus itself).
[[nodiscard]] bool is_valid_label_name(std::string_view name);
// Escapes backslash, double quote and newline as the format requires inside "...".
[[nodiscard]] std::string escape_label_value(std::string_view value);
// NaN, +Inf, -Inf; integers below 2^53 without exponent or fraction; otherwise the shortest text
// that reads back as the same double.
[[nodiscard]] std::string format_metric_value(double value);

class PrometheusText;

// A handle to one family inside a PrometheusText; valid as long as the PrometheusText is.
// Mistakes (bad label names, a duplicate label set, a sample of the wrong kind) are recorded and
// reported by PrometheusText::render().
class MetricFamily {
 public:
  MetricFamily& sample(const MetricLabels& labels, double value);
  MetricFamily& sample(double value) { return sample(MetricLabels{}, value); }
  // For a Histogram family: writes name_bucket{...,le="..."} for each bucket plus le="+Inf"
  // (= count), name_sum and name_count. Bounds must increase and counts must not decrease.
  MetricFamily& histogram(const MetricLabels& labels, std::span<const HistogramBucket> buckets,
                          double sum, std::uint64_t count);

  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  friend class PrometheusText;
  MetricFamily(PrometheusText& owner, std::string name, MetricType type, std::string help)
      : owner_(&owner), name_(std::move(name)), type_(type), help_(std::move(help)) {}

  void fail(std::string message);
  bool check_labels(const MetricLabels& labels, std::string_view reserved);
  void write_sample(std::string_view suffix, const MetricLabels& labels,
                    const std::optional<std::pair<std::string, std::string>>& extra, double value);

  PrometheusText* owner_;
  std::string name_;
  MetricType type_;
  std::string help_;
  std::string lines_;
  std::unordered_set<std::string> label_sets_;  // canonical label texts already written
};

class PrometheusText {
 public:
  PrometheusText() = default;
  PrometheusText(const PrometheusText&) = delete;
  PrometheusText& operator=(const PrometheusText&) = delete;

  // Starts a family. A second family of the same name, or an invalid name, is an error reported
  // by render(); the returned handle still accepts (and drops) samples.
  MetricFamily& family(std::string name, MetricType type, std::string help);

  // The exposition text, families in the order they were started; InvalidArgument naming the
  // first mistake.
  [[nodiscard]] core::Result<std::string> render() const;

 private:
  friend class MetricFamily;
  std::deque<MetricFamily> families_;  // deque: handles stay valid as families are added
  std::optional<core::Error> first_error_;
};

}  // namespace kernelwatch::http
