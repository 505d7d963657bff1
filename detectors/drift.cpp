#include "detectors/drift.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {

namespace {

int sign_of(double difference) {
  return static_cast<int>(difference > 0) - static_cast<int>(difference < 0);
}

}  // namespace

MannKendall remembered_trend(std::span<const double> values, DriftMemory& memory) {
  const std::size_t n = values.size();
  auto& seen = memory.window;
  const bool grew =
      seen.size() + 1 == n && std::equal(seen.begin(), seen.end(), values.begin());
  const bool slid = !seen.empty() && seen.size() == n &&
                    std::equal(seen.begin() + 1, seen.end(), values.begin());
  if (slid) {  // the oldest value left the window: its pairs go
    for (std::size_t j = 1; j < n; ++j) {
      memory.s -= sign_of(seen[j] - seen[0]);
      memory.tied_pairs -= seen[j] == seen[0] ? 1 : 0;
    }
  }
  if (grew || slid) {  // the newest value came: its pairs with every other one
    const double newest = values[n - 1];
    for (std::size_t i = 0; i + 1 < n; ++i) {
      memory.s += sign_of(newest - values[i]);
      memory.tied_pairs += newest == values[i] ? 1 : 0;
    }
  } else {
    memory.s = 0;
    memory.tied_pairs = 0;
    for (std::size_t i = 0; i + 1 < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) {
        memory.s += sign_of(values[j] - values[i]);
        memory.tied_pairs += values[j] == values[i] ? 1 : 0;
      }
    }
  }
  seen.assign(values.begin(), values.end());
  // Ties need the groups' sizes: rare for medians in nanoseconds, counted the long way.
  if (n < 3 || memory.tied_pairs != 0) return mann_kendall(values);
  const auto dn = static_cast<double>(n);
  const double variance = dn * (dn - 1) * (2 * dn + 5) / 18;
  const auto s = static_cast<double>(memory.s);
  const double corrected = s > 0 ? s - 1 : (s < 0 ? s + 1 : 0);
  return {s, corrected / std::sqrt(variance)};
}

DriftResult detect_drift(std::span<const Observation> runs, const DriftParameters& parameters,
                         DriftMemory* memory) {
  DriftResult result;
  const std::size_t n = std::min(runs.size(), parameters.window);
  result.runs = n;
  if (n < std::max<std::size_t>(parameters.min_runs, 3)) return result;
  thread_local std::vector<double> medians;  // called for every accepted run of a replay
  medians.clear();
  for (const auto& run : runs.subspan(runs.size() - n)) {
    medians.push_back(static_cast<double>(run.median.count()));
  }
  const auto trend = memory != nullptr ? remembered_trend(medians, *memory) : mann_kendall(medians);
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
