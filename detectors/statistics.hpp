// Robust statistics the detectors are built from: median, quantile, MAD, the Mann-Kendall trend
// test, the Theil-Sen slope, and the normal and Student t distributions (a young key's band and
// `kernelwatch compare` draw their intervals from them). Pure functions over plain vectors;
// standard library only.
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

// The standard normal distribution: P(Z <= z), and the z with P(Z <= z) = p (p in (0, 1); the
// ends clamp to +-38).
[[nodiscard]] double normal_cdf(double z);
[[nodiscard]] double normal_quantile(double p);

// Student's t distribution with `df` > 0 degrees of freedom (fractional allowed): P(T <= t), and
// the t with P(T <= t) = p. Exact to about 1e-10 (the regularized incomplete beta function);
// the quantile of an integral df and a p already asked for is served from a small table.
[[nodiscard]] double student_t_cdf(double t, double df);
[[nodiscard]] double student_t_quantile(double p, double df);

}  // namespace kernelwatch::detectors
