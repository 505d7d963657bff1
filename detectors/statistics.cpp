#include "detectors/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kernelwatch::detectors {

namespace {

// The detectors call these per run and key (a million-run replay makes millions of calls): the
// working copies reuse one buffer per thread instead of allocating each time.
std::vector<double>& scratch(std::vector<double>& buffer, std::span<const double> values) {
  buffer.assign(values.begin(), values.end());
  return buffer;
}

}  // namespace

double median(std::span<const double> values) {
  if (values.empty()) return 0;
  thread_local std::vector<double> buffer;
  std::vector<double>& sorted = scratch(buffer, values);
  const std::size_t mid = sorted.size() / 2;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(mid), sorted.end());
  const double upper = sorted[mid];
  if (sorted.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double quantile(std::span<const double> values, double probability) {
  if (values.empty()) return 0;
  thread_local std::vector<double> buffer;
  std::vector<double>& order = scratch(buffer, values);
  const double position =
      std::clamp(probability, 0.0, 1.0) * static_cast<double>(order.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  // The two order statistics around the position: the `below`-th, and the smallest after it.
  const auto at = order.begin() + static_cast<std::ptrdiff_t>(below);
  std::nth_element(order.begin(), at, order.end());
  const double low = *at;
  const double high = below + 1 < order.size() ? *std::min_element(at + 1, order.end()) : low;
  const double fraction = position - static_cast<double>(below);
  return low + fraction * (high - low);
}

double median_absolute_deviation(std::span<const double> values) {
  return values.empty() ? 0 : median_absolute_deviation(values, median(values));
}

double median_absolute_deviation(std::span<const double> values, double center) {
  if (values.empty()) return 0;
  thread_local std::vector<double> deviations;
  deviations.clear();
  for (double v : values) deviations.push_back(std::abs(v - center));
  return median(deviations);
}

MannKendall mann_kendall(std::span<const double> values) {
  const std::size_t n = values.size();
  if (n < 3) return {};
  // S = sum of sign(x_j - x_i) over i < j, counted in integers (the drift test keeps its count
  // between runs: detectors/drift.hpp remembered_trend).
  std::int64_t count = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const double x = values[i];
    for (std::size_t j = i + 1; j < n; ++j) {
      count += static_cast<std::int64_t>(values[j] > x) - static_cast<std::int64_t>(values[j] < x);
    }
  }
  const auto s = static_cast<double>(count);
  // Tie correction: each group of t equal values removes t(t-1)(2t+5) from the variance.
  // Groups of equal values, in ascending order, counted on a sorted copy.
  thread_local std::vector<double> buffer;
  std::vector<double>& sorted = scratch(buffer, values);
  std::sort(sorted.begin(), sorted.end());
  const auto dn = static_cast<double>(n);
  double variance = dn * (dn - 1) * (2 * dn + 5);
  for (std::size_t first = 0; first < n;) {
    std::size_t last = first + 1;
    while (last < n && sorted[last] == sorted[first]) ++last;
    const auto t = static_cast<double>(last - first);
    variance -= t * (t - 1) * (2 * t + 5);
    first = last;
  }
  variance /= 18;
  if (variance <= 0) return {s, 0};
  const double corrected = s > 0 ? s - 1 : (s < 0 ? s + 1 : 0);
  return {s, corrected / std::sqrt(variance)};
}

TheilSen theil_sen(std::span<const double> values) {
  const std::size_t n = values.size();
  if (n < 2) return {0, values.empty() ? 0 : values[0]};
  thread_local std::vector<double> slopes;
  slopes.clear();
  for (std::size_t i = 0; i + 1 < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      slopes.push_back((values[j] - values[i]) / static_cast<double>(j - i));
    }
  }
  const double slope = median(slopes);
  thread_local std::vector<double> intercepts;
  intercepts.clear();
  for (std::size_t i = 0; i < n; ++i)
    intercepts.push_back(values[i] - slope * static_cast<double>(i));
  return {slope, median(intercepts)};
}

}  // namespace kernelwatch::detectors
