#include "detectors/statistics.hpp"

#include <algorithm>
#include <cmath>

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
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double position =
      std::clamp(probability, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

double median_absolute_deviation(std::span<const double> values) {
  if (values.empty()) return 0;
  const double center = median(values);
  thread_local std::vector<double> deviations;
  deviations.clear();
  for (double v : values) deviations.push_back(std::abs(v - center));
  return median(deviations);
}

MannKendall mann_kendall(std::span<const double> values) {
  const std::size_t n = values.size();
  if (n < 3) return {};
  double s = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (values[j] > values[i]) s += 1;
      if (values[j] < values[i]) s -= 1;
    }
  }
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
