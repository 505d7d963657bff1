// `kernelwatch compare`'s verdict on one benchmark case: is the candidate slower, faster, the
// same as the baseline, or can the evidence not tell (docs/CI.md "How compare decides")? Pure
// functions over plain values; detectors/statistics and the standard library.
//
// Every test works on log times, so a change is a ratio and "5% slower" means the same on a
// 3 us kernel and on a 30 ms one:
//  - samples: both sides give at least two repetition times (Google Benchmark repetitions,
//    pytest-benchmark rounds, several runs of a case in one file). The Hodges-Lehmann estimate of
//    the shift (median of all pairwise differences) with the distribution-free interval the
//    Mann-Whitney statistic gives (exact null distribution up to 50 samples a side, normal beyond;
//    more than 1,000 samples a side are thinned to 1,000 evenly spaced order statistics, which
//    only widens the interval).
//  - quantiles: a side gives a spread but not its samples (p20/p80, q1/q3 or a standard deviation
//    with a sample count: nvbench, kernelindex records, Liger's CSV). A normal interval of the
//    difference of the two medians, each median's standard error 1.2533 sigma / sqrt(n) (sigma of
//    the log times from the spread; n = 1 when the count is not known, which is conservative).
//  - rounds: interleaved rounds A B, B A, ... (compare --rounds), one median per side and round,
//    judged on the rounds' paired log ratios, so drift that both sides of a round share cancels:
//    with enough rounds for it (6 at 95%), the Hodges-Lehmann estimate with the Wilcoxon
//    signed-rank interval (one disturbed round moves it little); with 2 to 5, the Student t
//    interval of their mean (n - 1 degrees of freedom).
// The verdict: slower when the estimate is at least the threshold and the interval lies above 0,
// faster when it is at most -threshold (log-symmetric: candidate <= baseline / (1 + t)) and the
// interval lies below 0, the same when the whole interval lies within +-threshold, ambiguous
// otherwise (the interval straddles a threshold, or there is too little data to draw one).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kernelwatch::detectors {

// What one side of a case gives, in ns.
struct CaseTimes {
  double median_ns = 0;          // the primary statistic (the mean where that is all)
  std::optional<double> p20_ns;  // quantiles of the repetition times, where given
  std::optional<double> p80_ns;
  std::optional<double> q1_ns;
  std::optional<double> q3_ns;
  std::optional<double> stddev_ns;  // of the repetition times, with mean_ns
  std::optional<double> mean_ns;
  std::int64_t count = 0;          // repetitions behind the statistics; 0: not known
  std::vector<double> samples_ns;  // the repetition times themselves, where given
};

enum class CompareVerdict { Same, Faster, Slower, Ambiguous };
[[nodiscard]] std::string_view to_string(CompareVerdict verdict) noexcept;

enum class CompareMethod { Samples, Quantiles, Rounds, Band, None };
[[nodiscard]] std::string_view to_string(CompareMethod method) noexcept;

struct CompareOptions {
  double threshold = 0.05;   // relative: 0.05 = 5%
  double confidence = 0.95;  // two-sided, of the interval
};

struct Comparison {
  CompareVerdict verdict = CompareVerdict::Ambiguous;
  CompareMethod method = CompareMethod::None;
  double change = 0;  // estimated candidate / baseline - 1
  // The interval of candidate / baseline - 1 at the confidence asked for; absent when there is
  // too little data to draw one (then `reason` says what is missing).
  std::optional<double> low;
  std::optional<double> high;
  std::int64_t base_count = 0;  // samples (or rounds) each side contributed
  std::int64_t candidate_count = 0;
  std::string reason;  // one line, for people: why this verdict
};

// One case of two result files.
[[nodiscard]] Comparison compare_times(const CaseTimes& baseline, const CaseTimes& candidate,
                                       const CompareOptions& options);

// One case of interleaved rounds: baseline[i] and candidate[i] are round i's medians (ns, > 0).
[[nodiscard]] Comparison compare_rounds(std::span<const double> baseline,
                                        std::span<const double> candidate,
                                        const CompareOptions& options);

// The interval of the Hodges-Lehmann shift of log(candidate) - log(baseline) (values > 0):
// {estimate, low, high}; low/high absent when the sizes cannot reach the confidence (3 and 3
// samples cannot reach 95%). Exposed for tests and bench/.
struct ShiftInterval {
  double estimate = 0;
  std::optional<double> low;
  std::optional<double> high;
};
[[nodiscard]] ShiftInterval log_shift_interval(std::span<const double> baseline,
                                               std::span<const double> candidate,
                                               double confidence);

// "+4.2%" of a ratio minus one, and "5%" of a fraction: how compare's reasons and reports write
// changes and thresholds.
[[nodiscard]] std::string signed_percent(double ratio_minus_one);
[[nodiscard]] std::string plain_percent(double fraction);

// P(W+ <= w) for the Wilcoxon signed-rank statistic of n pairs under the null (no ties).
[[nodiscard]] double signed_rank_cdf(std::int64_t w, std::int64_t n);

// P(U <= u) for the Mann-Whitney U of samples of n and m under the null (no ties).
[[nodiscard]] double mann_whitney_cdf(std::int64_t u, std::int64_t n, std::int64_t m);

}  // namespace kernelwatch::detectors
