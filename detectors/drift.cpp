#include "detectors/drift.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {

DriftResult detect_drift(std::span<const Observation> runs, const DriftParameters& parameters) {
  DriftResult result;
  const std::size_t n = std::min(runs.size(), parameters.window);
  result.runs = n;
  if (n < std::max<std::size_t>(parameters.min_runs, 3)) return result;
  thread_local std::vector<double> medians;  // called for every accepted run of a replay
  medians.clear();
  for (const auto& run : runs.subspan(runs.size() - n)) {
    medians.push_back(static_cast<double>(run.median.count()));
  }
  const auto trend = mann_kendall(medians);
  result.z = trend.z;
  result.direction = result.z > 0 ? Direction::Regression : Direction::Improvement;
  // Without a significant trend there is no drift whatever the line: it is not drawn.
  if (std::abs(result.z) < parameters.z_threshold) return result;
  const auto line = theil_sen(medians);
  const double start = line.intercept;
  const double end = line.intercept + line.slope * static_cast<double>(n - 1);
  result.relative_change = start > 0 ? (end - start) / start : 0;
  result.detected = std::abs(result.relative_change) >= parameters.min_total_change &&
                    (result.z > 0) == (result.relative_change > 0);
  if (!result.detected) return result;  // the text is read only when it alerts
  char text[200];
  std::snprintf(text, sizeof text,
                "%s drift: the newest %zu accepted runs moved %.1f%% along a steady trend "
                "(Mann-Kendall z = %.1f) from %s to %s",
                result.relative_change >= 0 ? "upward" : "downward", n,
                std::abs(result.relative_change) * 100, result.z,
                core::format_latency(start).c_str(), core::format_latency(end).c_str());
  result.explanation = text;
  return result;
}

}  // namespace kernelwatch::detectors
