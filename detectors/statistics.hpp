// Robust statistics the detectors are built from: median, quantile, MAD, the Mann-Kendall trend
// test and the Theil-Sen slope. Pure functions over plain vectors; standard library only.
#pragma once

#include <span>
#include <vector>

namespace kernelwatch::detectors {

// Median of the values (the mean of the two middle values for an even count). Empty -> 0.
[[nodiscard]] double median(std::span<const double> values);

// Quantile with linear interpolation between order statistics (type 7, as numpy's default).
[[nodiscard]] double quantile(std::span<const double> values, double probability);

// Median absolute deviation from the median (unscaled; multiply by 1.4826 for a normal sigma).
[[nodiscard]] double median_absolute_deviation(std::span<const double> values);
// The same about a median the caller already has (`center` == median(values)).
[[nodiscard]] double median_absolute_deviation(std::span<const double> values, double center);

// Mann-Kendall S statistic and its normal score with the tie-corrected variance and the
// continuity correction. z > 0 means an upward trend in index order. n < 3 -> {0, 0}.
struct MannKendall {
  double s = 0;
  double z = 0;
};
[[nodiscard]] MannKendall mann_kendall(std::span<const double> values);

// Theil-Sen estimate: the median of the pairwise slopes (value units per index step) and the
// intercept (median of value - slope * index).
struct TheilSen {
  double slope = 0;
  double intercept = 0;
};
[[nodiscard]] TheilSen theil_sen(std::span<const double> values);

}  // namespace kernelwatch::detectors
