#include "detectors/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

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
  const double position = std::clamp(probability, 0.0, 1.0) * static_cast<double>(order.size() - 1);
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

namespace {

// The continued fraction of the regularized incomplete beta function I_x(a, b) (modified Lentz),
// for x < (a + 1) / (a + b + 2), where it converges fast.
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  constexpr double epsilon = 1e-15;
  double c = 1;
  double d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double term = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + term * d;
    c = 1 + term / c;
    if (std::abs(d) < tiny) d = tiny;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    term = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + term * d;
    c = 1 + term / c;
    if (std::abs(d) < tiny) d = tiny;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < epsilon) break;
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function, for x in [0, 1].
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

}  // namespace

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

double normal_quantile(double p) {
  if (!(p > 0)) return -38;
  if (!(p < 1)) return 38;
  // Bisection on the cdf to a bracket of 1e-12, then one Newton step: exact enough for the
  // intervals it draws, and only called with a few distinct p.
  double low = -38;
  double high = 38;
  for (int i = 0; i < 200 && high - low > 1e-12; ++i) {
    const double mid = (low + high) / 2;
    (normal_cdf(mid) < p ? low : high) = mid;
  }
  const double z = (low + high) / 2;
  const double density = std::exp(-z * z / 2) / std::sqrt(2 * 3.14159265358979323846);
  return density > 0 ? z - (normal_cdf(z) - p) / density : z;
}

double student_t_cdf(double t, double df) {
  if (!(df > 0) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double x = df / (df + t * t);
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, x);  // P(T > |t|)
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(df > 0) || std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
  if (!(p > 0)) return -std::numeric_limits<double>::infinity();
  if (!(p < 1)) return std::numeric_limits<double>::infinity();
  if (p == 0.5) return 0;
  // A young key asks for the same few (p, df) at every run of a replay.
  const bool integral = df == std::floor(df) && df <= 1e6;
  thread_local std::map<std::pair<double, double>, double> known;
  if (integral) {
    if (const auto it = known.find({p, df}); it != known.end()) return it->second;
  }
  // P(T <= t) is increasing in t: bisection on a bracket that holds the quantile (t grows like
  // p^(-1/df) in the tail, so the bracket doubles until it holds it).
  const bool upper = p > 0.5;
  const double target = upper ? p : 1 - p;
  double low = 0;
  double high = 1;
  while (student_t_cdf(high, df) < target && high < 1e300) high *= 2;
  for (int i = 0; i < 300 && high - low > 1e-12 * std::max(1.0, high); ++i) {
    const double mid = (low + high) / 2;
    (student_t_cdf(mid, df) < target ? low : high) = mid;
  }
  const double t = (upper ? 1 : -1) * (low + high) / 2;
  if (integral && known.size() < 4096) known.emplace(std::pair{p, df}, t);
  return t;
}

}  // namespace kernelwatch::detectors
