// compare's statistics: the Mann-Whitney null distribution against its tables, the coverage of
// the Hodges-Lehmann interval on seeded samples, and the verdicts of each method.
#include "detectors/compare.hpp"
#include "detectors/statistics.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace kernelwatch::detectors {
namespace {

std::vector<double> lognormal(std::mt19937_64& rng, std::size_t n, double centre, double sigma) {
  std::normal_distribution<double> z(0.0, sigma);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(centre * std::exp(z(rng)));
  return out;
}

CaseTimes sampled(const std::vector<double>& samples) {
  CaseTimes t;
  t.median_ns = samples.front();
  t.samples_ns = samples;
  return t;
}

CaseTimes spread(double median, std::optional<double> p20, std::optional<double> p80,
                 std::int64_t count) {
  CaseTimes t;
  t.median_ns = median;
  t.p20_ns = p20;
  t.p80_ns = p80;
  t.count = count;
  return t;
}

CompareOptions options(double threshold, double confidence = 0.95) {
  CompareOptions o;
  o.threshold = threshold;
  o.confidence = confidence;
  return o;
}

TEST(Compare, MannWhitneyNullDistributionMatchesTheTables) {
  // n = m = 5: C(10, 5) = 252 arrangements; U = 0, 1, 2, 3 occur 1, 1, 2, 3 times.
  EXPECT_NEAR(mann_whitney_cdf(0, 5, 5), 1.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_cdf(2, 5, 5), 4.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_cdf(3, 5, 5), 7.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_cdf(0, 4, 4), 1.0 / 70, 1e-12);
  // Symmetric about nm / 2.
  EXPECT_NEAR(mann_whitney_cdf(12, 5, 5) + mann_whitney_cdf(12, 5, 5), 1.0, 1e-12);
  EXPECT_NEAR(mann_whitney_cdf(10, 4, 7) + (1 - mann_whitney_cdf(17, 4, 7)),
              2 * mann_whitney_cdf(10, 4, 7), 1e-12);
  // The normal approximation beyond 50 a side agrees with the exact distribution at 50.
  // (and beyond 50 a side the normal one is what is used).
  const double sd = std::sqrt(50.0 * 50.0 * 101.0 / 12.0);
  EXPECT_NEAR(mann_whitney_cdf(1000, 50, 50), normal_cdf((1000.5 - 1250.0) / sd), 0.002);
  const double sd51 = std::sqrt(51.0 * 50.0 * 102.0 / 12.0);
  EXPECT_DOUBLE_EQ(mann_whitney_cdf(1000, 51, 50), normal_cdf((1000.5 - 1275.0) / sd51));
  EXPECT_DOUBLE_EQ(mann_whitney_cdf(-1, 5, 5), 0.0);
  EXPECT_DOUBLE_EQ(mann_whitney_cdf(25, 5, 5), 1.0);
}

TEST(Compare, SignedRankNullDistributionMatchesTheTables) {
  // n = 6: 64 sign patterns; W+ = 0, 1, 2 occur 1, 1, 1 times; the two-sided 5% critical value is
  // 0 (P = 1/64 per side). n = 10: the two-sided 5% critical value is 8 (P(W+ <= 8) = 25/1024).
  EXPECT_NEAR(signed_rank_cdf(0, 6), 1.0 / 64, 1e-12);
  EXPECT_NEAR(signed_rank_cdf(2, 6), 3.0 / 64, 1e-12);
  EXPECT_NEAR(signed_rank_cdf(8, 10), 25.0 / 1024, 1e-12);
  EXPECT_GT(signed_rank_cdf(9, 10), 0.025);
  EXPECT_NEAR(signed_rank_cdf(0, 5), 1.0 / 32, 1e-12);  // 5 pairs cannot reach 95%
  const double sd = std::sqrt(60.0 * 61.0 * 121.0 / 24.0);
  EXPECT_DOUBLE_EQ(signed_rank_cdf(700, 60), normal_cdf((700.5 - 915.0) / sd));
}

TEST(Compare, TheShiftIntervalCoversTheTrueShiftAtLeastAsOftenAsAsked) {
  std::mt19937_64 rng(20261203);
  for (const std::size_t n : {5u, 10u, 60u}) {
    int covered = 0;
    const int trials = 1000;
    for (int t = 0; t < trials; ++t) {
      const auto a = lognormal(rng, n, 1000.0, 0.05);
      const auto b = lognormal(rng, n, 1070.0, 0.05);
      const ShiftInterval s = log_shift_interval(a, b, 0.95);
      ASSERT_TRUE(s.low && s.high) << n;
      if (*s.low <= std::log(1.07) && std::log(1.07) <= *s.high) ++covered;
    }
    EXPECT_GE(covered, 940) << n << " samples a side";
    EXPECT_LE(covered, 990) << n << " samples a side: the interval is wider than it needs to be";
  }
}

TEST(Compare, ThreeSamplesASideCannotReachNinetyFivePercent) {
  const std::vector<double> a{100, 101, 102};
  const std::vector<double> b{150, 151, 152};
  EXPECT_FALSE(log_shift_interval(a, b, 0.95).low);
  const Comparison c = compare_times(sampled(a), sampled(b), {});
  EXPECT_EQ(c.verdict, CompareVerdict::Ambiguous);
  EXPECT_NE(c.reason.find("too few"), std::string::npos) << c.reason;
  EXPECT_NEAR(c.change, 0.495, 0.01);
}

TEST(Compare, SamplesTellSlowerFasterSameAndAmbiguous) {
  std::mt19937_64 rng(7);
  const auto base = lognormal(rng, 20, 5000.0, 0.01);
  const auto slow = lognormal(rng, 20, 5500.0, 0.01);
  const auto fast = lognormal(rng, 20, 4500.0, 0.01);
  const auto same = lognormal(rng, 20, 5000.0, 0.01);
  const auto noisy = lognormal(rng, 20, 5200.0, 0.3);
  const auto times = sampled;
  const Comparison s = compare_times(times(base), times(slow), {});
  EXPECT_EQ(s.verdict, CompareVerdict::Slower) << s.reason;
  EXPECT_EQ(s.method, CompareMethod::Samples);
  EXPECT_NEAR(s.change, 0.10, 0.02);
  ASSERT_TRUE(s.low && s.high);
  EXPECT_LT(*s.low, s.change);
  EXPECT_GT(*s.high, s.change);
  EXPECT_EQ(compare_times(times(base), times(fast), {}).verdict, CompareVerdict::Faster);
  EXPECT_EQ(compare_times(times(base), times(same), {}).verdict, CompareVerdict::Same);
  const Comparison n = compare_times(times(base), times(noisy), {});
  EXPECT_EQ(n.verdict, CompareVerdict::Ambiguous) << n.reason;
  // A 10% slowdown under a 20% threshold is not "slower".
  EXPECT_NE(compare_times(times(base), times(slow), options(0.20)).verdict, CompareVerdict::Slower);
}

TEST(Compare, QuantilesWithoutSamplesUseTheSpreadAndTheCount) {
  // p20/p80 of +-1% and 100 samples: a 10% change is far outside; with one sample (count
  // unknown) the same spread cannot tell 3%.
  const CaseTimes base = spread(1000, 990, 1010, 100);
  const CaseTimes slow = spread(1100, 1089, 1111, 100);
  const Comparison c = compare_times(base, slow, {});
  EXPECT_EQ(c.method, CompareMethod::Quantiles);
  EXPECT_EQ(c.verdict, CompareVerdict::Slower) << c.reason;
  CaseTimes wide_base = base;
  wide_base.count = 0;
  wide_base.p20_ns = 900;
  wide_base.p80_ns = 1100;
  const CaseTimes little = spread(1060, 960, 1160, 0);
  EXPECT_EQ(compare_times(wide_base, little, {}).verdict, CompareVerdict::Ambiguous);
  // nvbench's mean and standard deviation serve as well.
  CaseTimes nv_base = spread(1000, std::nullopt, std::nullopt, 200);
  nv_base.stddev_ns = 5;
  nv_base.mean_ns = 1000;
  CaseTimes nv_same = spread(1002, std::nullopt, std::nullopt, 200);
  nv_same.stddev_ns = 5;
  nv_same.mean_ns = 1002;
  EXPECT_EQ(compare_times(nv_base, nv_same, {}).verdict, CompareVerdict::Same);
}

TEST(Compare, OneTimePerCaseIsTooLittleData) {
  const Comparison c = compare_times(spread(1000, std::nullopt, std::nullopt, 0),
                                     spread(2000, std::nullopt, std::nullopt, 0), {});
  EXPECT_EQ(c.verdict, CompareVerdict::Ambiguous);
  EXPECT_EQ(c.method, CompareMethod::None);
  EXPECT_FALSE(c.low);
  EXPECT_NE(c.reason.find("neither side"), std::string::npos) << c.reason;
  EXPECT_NEAR(c.change, 1.0, 1e-9);
}

TEST(Compare, RoundsCancelTheDriftBothSidesOfARoundShare) {
  // The machine drifts by +-20% from round to round; the candidate is 6% slower in each round.
  // Unpaired, the rounds' medians cannot tell; paired, they do.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> drift(0.0, 0.2);
  std::normal_distribution<double> jitter(0.0, 0.005);
  std::vector<double> a;
  std::vector<double> b;
  for (int i = 0; i < 6; ++i) {
    const double machine = 1000.0 * std::exp(drift(rng));
    a.push_back(machine * std::exp(jitter(rng)));
    b.push_back(machine * 1.06 * std::exp(jitter(rng)));
  }
  const Comparison paired = compare_rounds(a, b, {});
  EXPECT_EQ(paired.verdict, CompareVerdict::Slower) << paired.reason;
  EXPECT_EQ(paired.method, CompareMethod::Rounds);
  EXPECT_NEAR(paired.change, 0.06, 0.01);
  const Comparison unpaired = compare_times(sampled(a), sampled(b), {});
  EXPECT_EQ(unpaired.verdict, CompareVerdict::Ambiguous) << unpaired.reason;
  EXPECT_EQ(compare_rounds(a, a, {}).verdict, CompareVerdict::Same);
  // One round disturbed by a +40% burst on the candidate's side: with 10 rounds the signed-rank
  // interval still says slower, and the estimate stays near 6%.
  for (int i = 6; i < 10; ++i) {
    const double machine = 1000.0 * std::exp(drift(rng));
    a.push_back(machine * std::exp(jitter(rng)));
    b.push_back(machine * 1.06 * std::exp(jitter(rng)));
  }
  b[3] *= 1.4;
  const Comparison robust = compare_rounds(a, b, {});
  EXPECT_EQ(robust.verdict, CompareVerdict::Slower) << robust.reason;
  EXPECT_NEAR(robust.change, 0.06, 0.015);
  EXPECT_EQ(compare_rounds(std::vector<double>{1000}, std::vector<double>{1100}, {}).verdict,
            CompareVerdict::Ambiguous);
}

TEST(Compare, AnUnchangedCandidateRarelyReadsSlowerEvenWithoutAThreshold) {
  std::mt19937_64 rng(3);
  int slower = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    const auto a = lognormal(rng, 10, 1000.0, 0.03);
    const auto b = lognormal(rng, 10, 1000.0, 0.03);
    const Comparison c = compare_times(sampled(a), sampled(b), options(0.0));
    if (c.verdict == CompareVerdict::Slower) ++slower;
  }
  // One side of a 95% interval: at most 2.5% of unchanged candidates, in expectation.
  EXPECT_LE(slower, 70);
  EXPECT_GE(slower, 10) << "an interval this conservative would miss real slowdowns";
}

}  // namespace
}  // namespace kernelwatch::detectors
