// Prometheus text exposition format 0.0.4, as specified in
// https://prometheus.io/docs/instrumenting/exposition_formats/.
#include "http/prometheus.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace kernelwatch::http {
namespace {

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Histogram:
      return "histogram";
    case MetricType::Untyped:
      return "untyped";
  }
  return "untyped";
}

// HELP text escapes backslash and newline only.
std::string escape_help(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

bool is_valid_metric_name(std::string_view name) {
  if (name.empty() || !(is_letter(name[0]) || name[0] == '_' || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return is_letter(c) || is_digit(c) || c == '_' || c == ':'; });
}

bool is_valid_label_name(std::string_view name) {
  if (name.empty() || !(is_letter(name[0]) || name[0] == '_')) return false;
  if (name.substr(0, 2) == "__") return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return is_letter(c) || is_digit(c) || c == '_'; });
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::trunc(value) == value && std::fabs(value) < kExactIntegers) {
    return std::to_string(static_cast<std::int64_t>(value));  // -0.0 becomes "0"
  }
  std::array<char, 64> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  KW_ASSERT(ec == std::errc{}, "to_chars of a double cannot overflow 64 characters");
  return std::string(buffer.data(), end);
}

void MetricFamily::fail(std::string message) {
  if (!owner_->first_error_) {
    owner_->first_error_ =
        core::Error{core::ErrorCode::InvalidArgument, "metric `" + name_ + "`: " + message};
  }
}

bool MetricFamily::check_labels(const MetricLabels& labels, std::string_view reserved) {
  std::vector<std::string_view> names;
  for (const auto& [name, value] : labels) {
    if (!is_valid_label_name(name)) {
      fail("invalid label name `" + name + "` (must match [a-zA-Z_][a-zA-Z0-9_]*, no leading __)");
      return false;
    }
    if (!reserved.empty() && name == reserved) {
      fail("label `" + name + "` is reserved for this metric type");
      return false;
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
    fail("a sample names the same label twice");
    return false;
  }
  // A second sample with the same label set is a duplicate series.
  MetricLabels sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  std::string canonical;
  for (const auto& [name, value] : sorted) {
    canonical += (canonical.empty() ? "" : ",") + name + "=\"" + escape_label_value(value) + '"';
  }
  // A set: 5,000 keys' samples in one family were 12.5 million comparisons with a list.
  if (!label_sets_.insert(canonical).second) {
    fail("two samples with the same labels {" + canonical + "}");
    return false;
  }
  return true;
}

void MetricFamily::write_sample(std::string_view suffix, const MetricLabels& labels,
                                const std::optional<std::pair<std::string, std::string>>& extra,
                                double value) {
  lines_ += name_;
  lines_ += suffix;
  if (!labels.empty() || extra) {
    lines_ += '{';
    bool first = true;
    const auto write_label = [&](const std::string& name, const std::string& label_value) {
      if (!first) lines_ += ',';
      first = false;
      lines_ += name + "=\"" + escape_label_value(label_value) + '"';
    };
    for (const auto& [name, label_value] : labels) write_label(name, label_value);
    if (extra) write_label(extra->first, extra->second);
    lines_ += '}';
  }
  lines_ += ' ';
  lines_ += format_metric_value(value);
  lines_ += '\n';
}

MetricFamily& MetricFamily::sample(const MetricLabels& labels, double value) {
  if (type_ == MetricType::Histogram) {
    fail("a histogram takes histogram(), not sample()");
    return *this;
  }
  if (type_ == MetricType::Counter && (value < 0 || std::isnan(value))) {
    fail("a counter cannot be negative or NaN");
    return *this;
  }
  if (!check_labels(labels, {})) return *this;
  write_sample("", labels, std::nullopt, value);
  return *this;
}

MetricFamily& MetricFamily::histogram(const MetricLabels& labels,
                                      std::span<const HistogramBucket> buckets, double sum,
                                      std::uint64_t count) {
  if (type_ != MetricType::Histogram) {
    fail("histogram() on a family that is not a histogram");
    return *this;
  }
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& bucket = buckets[i];
    if (std::isnan(bucket.upper_bound) ||
        (i > 0 && !(bucket.upper_bound > buckets[i - 1].upper_bound)) ||
        (i > 0 && bucket.cumulative_count < buckets[i - 1].cumulative_count) ||
        bucket.cumulative_count > count) {
      fail("histogram buckets must have increasing bounds and cumulative counts up to count");
      return *this;
    }
  }
  if (!check_labels(labels, "le")) return *this;
  for (const auto& bucket : buckets) {
    if (std::isinf(bucket.upper_bound) && bucket.upper_bound > 0) continue;  // written below
    write_sample("_bucket", labels,
                 std::pair<std::string, std::string>{"le", format_metric_value(bucket.upper_bound)},
                 static_cast<double>(bucket.cumulative_count));
  }
  write_sample("_bucket", labels, std::pair<std::string, std::string>{"le", "+Inf"},
               static_cast<double>(count));
  write_sample("_sum", labels, std::nullopt, sum);
  write_sample("_count", labels, std::nullopt, static_cast<double>(count));
  return *this;
}

MetricFamily& PrometheusText::family(std::string name, MetricType type, std::string help) {
  const bool valid = is_valid_metric_name(name);
  const bool duplicate =
      std::any_of(families_.begin(), families_.end(),
                  [&](const MetricFamily& family) { return family.name_ == name; });
  families_.push_back(MetricFamily(*this, std::move(name), type, std::move(help)));
  MetricFamily& family = families_.back();
  if (!valid) {
    family.fail("invalid metric name (must match [a-zA-Z_:][a-zA-Z0-9_:]*)");
  } else if (duplicate) {
    family.fail("the family is defined twice");
  }
  return family;
}

core::Result<std::string> PrometheusText::render() const {
  if (first_error_) return tl::unexpected(*first_error_);
  std::string out;
  for (const auto& family : families_) {
    out += "# HELP " + family.name_ + ' ' + escape_help(family.help_) + '\n';
    out += "# TYPE " + family.name_ + ' ' + std::string(type_name(family.type_)) + '\n';
    out += family.lines_;
  }
  return out;
}

}  // namespace kernelwatch::http
