#include "kernels/harness/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace kernelwatch::kernels {

double quantile_sorted(std::span<const double> sorted, double q) {
  KW_ASSERT(!sorted.empty(), "quantile of no samples");
  KW_ASSERT(q >= 0.0 && q <= 1.0, "quantile outside [0, 1]");
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

Summary summarize(std::vector<double> samples_ns) {
  KW_ASSERT(!samples_ns.empty(), "summary of no samples");
  std::sort(samples_ns.begin(), samples_ns.end());
  const auto ns = [](double value) { return std::chrono::nanoseconds{std::llround(value)}; };
  Summary s;
  s.count = samples_ns.size();
  s.min = ns(samples_ns.front());
  s.max = ns(samples_ns.back());
  s.p20 = ns(quantile_sorted(samples_ns, 0.2));
  s.median = ns(quantile_sorted(samples_ns, 0.5));
  s.p80 = ns(quantile_sorted(samples_ns, 0.8));
  s.mean_ns = std::accumulate(samples_ns.begin(), samples_ns.end(), 0.0) /
              static_cast<double>(samples_ns.size());
  return s;
}

}  // namespace kernelwatch::kernels
