#include "detectors/band.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using testing::run_at;

// Five runs with medians 99000..101000 ns, p20 = median - 300, p80 = median + 400.
// centre 100000, MAD 500: spread = 3 x 1.4826 x 500 / 100000 = 2.2239%. A trusted key: floor 1%.
// range [99000 - 1000, 101000 + 1000] = [98000, 102000]; around the centre
// [100000 / 1.022239, 100000 x 1.022239] = [97824.48, 102223.9]: the union, rounded outward,
// [97824, 102224].
std::vector<Observation> spread_baseline() {
  std::vector<Observation> runs;
  const std::int64_t medians[] = {100000, 101000, 99000, 100500, 99500};
  for (int i = 0; i < 5; ++i) runs.push_back(run_at(i, medians[i], 300, 400));
  return runs;
}

// Five identical runs at 200000 ns: MAD 0, so the floor decides: trusted 1% -> [198000, 202000].
std::vector<Observation> tight_baseline(std::int64_t below = 0, std::int64_t above = 0) {
  std::vector<Observation> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(run_at(i, 200000, below, above));
  return runs;
}

const BandContext kTrusted{{}, true};

struct BandCase {
  const char* name;
  std::vector<Observation> baseline;
  std::int64_t median;
  VerdictKind expected;
  std::int64_t lower;
  std::int64_t upper;
  double relative_change;
};

TEST(Band, TableOfHandComputedBandsAndVerdicts) {
  const std::vector<BandCase> cases = {
      {"upper edge is inside", spread_baseline(), 102224, VerdictKind::InBand, 97824, 102224,
       0.02224},
      {"one ns above the edge", spread_baseline(), 102225, VerdictKind::Regression, 97824, 102224,
       0.02225},
      {"lower edge is inside", spread_baseline(), 97824, VerdictKind::InBand, 97824, 102224,
       -0.02176},
      {"one ns below the edge", spread_baseline(), 97823, VerdictKind::Improvement, 97824, 102224,
       -0.02177},
      {"ten percent slower", spread_baseline(), 110000, VerdictKind::Regression, 97824, 102224,
       0.10},
      {"the 1% floor decides", tight_baseline(), 202001, VerdictKind::Regression, 198000, 202000,
       0.010005},
      {"the 1% floor keeps 1% in", tight_baseline(), 202000, VerdictKind::InBand, 198000, 202000,
       0.01},
      // Wide runs: the medians of p20 (195000) and p80 (210000) are outside the 1% floor.
      {"p80 widens the band", tight_baseline(5000, 10000), 209000, VerdictKind::InBand, 195000,
       210000, 0.045},
      {"p20 widens the band", tight_baseline(5000, 10000), 195500, VerdictKind::InBand, 195000,
       210000, -0.0225},
      {"beyond the p80", tight_baseline(5000, 10000), 210001, VerdictKind::Regression, 195000,
       210000, 0.050005},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto verdict = judge(c.baseline, run_at(9, c.median), BandParameters{}, kTrusted);
    EXPECT_EQ(verdict.kind, c.expected);
    ASSERT_TRUE(verdict.has_band);
    EXPECT_EQ(verdict.band.lower.count(), c.lower);
    EXPECT_EQ(verdict.band.upper.count(), c.upper);
    EXPECT_NEAR(verdict.relative_change, c.relative_change, 1e-9);
    EXPECT_EQ(verdict.baseline_runs, c.baseline.size());
    EXPECT_FALSE(verdict.explanation.empty());
  }
}

// A young key whose runs came from several hosts: a floor of 2%, and at least 50 us of its
// centre (launch-bound kernels swing that much between CI hosts).
TEST(Band, YoungKeysOfSeveralHostsHaveTheWiderPriors) {
  const BandParameters parameters;
  BandContext several;
  several.several_hosts = true;
  std::string why;
  // 200 us: 50 us is 25% -> [150000, 250000].
  const auto short_kernel = band_of(tight_baseline(), several, parameters, &why);
  EXPECT_EQ(short_kernel.lower.count(), 150000);
  EXPECT_EQ(short_kernel.upper.count(), 250000);
  EXPECT_EQ(why, "range +- 25.0% (young key)");
  // 10 ms: 50 us is 0.5%, the 2% prior decides -> [9800000, 10200000].
  std::vector<Observation> long_runs;
  for (int i = 0; i < 5; ++i) long_runs.push_back(run_at(i, 10'000'000));
  const auto long_kernel = band_of(long_runs, several, parameters, &why);
  EXPECT_EQ(long_kernel.lower.count(), 9'800'000);
  EXPECT_EQ(long_kernel.upper.count(), 10'200'000);
  EXPECT_EQ(why, "range +- 2.0% (young key)");
  // Trusted: 1%.
  const auto trusted = band_of(long_runs, kTrusted, parameters, &why);
  EXPECT_EQ(trusted.upper.count(), 10'100'000);
  EXPECT_EQ(why, "range +- 1.0%");
}

// The key's own settled excursions widen the band on their side only.
TEST(Band, OwnExcursionsWidenTheirSide) {
  // Residuals: three +10% excursions, one -1%, one 0. Upward: the 87.5% quantile of
  // {0, 0, 0.1, 0.1, 0.1} is 0.1 -> expm1(2 x 0.1) = 22.14%: upper 200000 x 1.2214 = 244281.
  // Downward: of {0, 0, 0, 0, 0.01} it is 0.005 -> expm1(0.01) = 1.005%: 200000 / 1.01005 =
  // 198010, inside the 1% range edge 198000, which stays.
  const std::vector<double> residuals = {0.1, 0.1, -0.01, 0.1, 0.0};
  std::string why;
  const auto band = band_of(tight_baseline(), BandContext{residuals, true}, BandParameters{}, &why);
  EXPECT_EQ(band.upper.count(), 244281);
  EXPECT_EQ(band.lower.count(), 198000);
  EXPECT_EQ(why, "own excursions (+22.1% / -1.0%)");
  // Fewer than noise_min_runs (4) residuals: not yet.
  const std::vector<double> three = {0.1, 0.1, 0.1};
  EXPECT_EQ(band_of(tight_baseline(), BandContext{three, true}, BandParameters{}).upper.count(),
            202000);
}

TEST(Band, ShortBaselinesJudgeOnlyBigSteps) {
  std::vector<Observation> three;
  for (int i = 0; i < 3; ++i) three.push_back(run_at(i, 10'000'000));
  const BandParameters parameters;  // min_history 5, big steps (20%) from 2 runs
  EXPECT_EQ(judge(three, run_at(5, 11'500'000), parameters).kind, VerdictKind::InsufficientData);
  EXPECT_EQ(judge(three, run_at(5, 11'999'999), parameters).kind, VerdictKind::InsufficientData);
  const auto big = judge(three, run_at(5, 12'500'000), parameters);
  EXPECT_EQ(big.kind, VerdictKind::Regression);
  EXPECT_EQ(big.band.lower.count(), 9'800'000);
  EXPECT_EQ(big.band.upper.count(), 10'200'000);
  EXPECT_EQ(judge(three, run_at(5, 7'000'000), parameters).kind, VerdictKind::Improvement);
  // A short kernel's big step must also clear its band: with the cross-host prior (young,
  // jitter-wide) 100 us has +-50% ...
  std::vector<Observation> fast;
  for (int i = 0; i < 3; ++i) fast.push_back(run_at(i, 100'000));
  BandContext several;
  several.several_hosts = true;
  EXPECT_EQ(judge(fast, run_at(5, 140'000), parameters, several).kind,
            VerdictKind::InsufficientData);
  EXPECT_EQ(judge(fast, run_at(5, 160'000), parameters, several).kind, VerdictKind::Regression);
  // ... and on one host its evidence: three identical runs, no spread, a 2% floor: +40% is a
  // regression, +19% is not yet judged (big steps only, below 5 runs).
  EXPECT_EQ(judge(fast, run_at(5, 140'000), parameters).kind, VerdictKind::Regression);
  EXPECT_EQ(judge(fast, run_at(5, 119'000), parameters).kind, VerdictKind::InsufficientData);
  // One run is never enough, whatever the change.
  EXPECT_EQ(judge(std::vector<Observation>{run_at(0, 100000)}, run_at(5, 300000), parameters).kind,
            VerdictKind::InsufficientData);
  EXPECT_EQ(judge({}, run_at(5, 300000), parameters).kind, VerdictKind::InsufficientData);
}

// A young key of one host: the Student t interval of its medians (log scale) pooled with its
// runs' own spread. spread_baseline(): log medians' sum of squares 2.5003e-4 over 4 df; own sigma
// median log(100400 / 99700) / 1.6832 = 0.0041567 for 2 df: pooled sigma 0.0068869 over 6 df.
// Alone (no confirmation) t(6, 0.9995) = 5.9588: h = 5.9588 x 0.0068869 x sqrt(1.2) = 0.044954:
// [100000 e^-h, 100000 e^h] = [95604.1, 104598.0] (wider than the 2% range [97000, 103000]).
// Confirmed by the next run t(6, 0.995) = 3.7074: h = 0.027969, [97241.8, 102836.4], inside
// the range, which decides.
TEST(Band, AYoungKeyOfOneHostHasTheIntervalItsRunsShow) {
  std::string why;
  const auto alone = band_of(spread_baseline(), BandContext{}, BandParameters{}, &why);
  EXPECT_EQ(alone.lower.count(), 95604);
  EXPECT_EQ(alone.upper.count(), 104599);
  EXPECT_EQ(why.rfind("evidence +- 4.6% (young key of one host: 5 run(s), noise 0.7%, own "
                      "spread 0.4%)",
                      0),
            0u)
      << why;
  BandContext confirmed;
  confirmed.confirmed = true;
  const auto next = band_of(spread_baseline(), confirmed, BandParameters{}, &why);
  EXPECT_EQ(next.lower.count(), 97000);
  EXPECT_EQ(next.upper.count(), 103000);
  EXPECT_EQ(why, "range +- 2.0% (young key of one host)");
  // The same runs with the cross-host prior: 50 us of 100 us.
  BandContext several;
  several.several_hosts = true;
  EXPECT_EQ(band_of(spread_baseline(), several, BandParameters{}).upper.count(), 151000);
}

// A run whose own spread is wide is judged with that width: +30% with a p20-p80 of +-10% is not
// a regression of a key whose runs are 0.7% wide; the same median with a tight spread is.
TEST(Band, ARunWithAWideSpreadOfItsOwnIsJudgedWithIt) {
  const auto tight = judge(spread_baseline(), run_at(9, 130000, 300, 400), BandParameters{});
  EXPECT_EQ(tight.kind, VerdictKind::Regression) << tight.explanation;
  const auto wide = judge(spread_baseline(), run_at(9, 130000, 13000, 13000), BandParameters{});
  EXPECT_EQ(wide.kind, VerdictKind::InBand) << wide.explanation;
  EXPECT_NE(wide.explanation.find("judged with it"), std::string::npos) << wide.explanation;
  EXPECT_GT(wide.band.upper.count(), 130000);
}

// Never a negative bound: a 5 us key of several hosts has a 50 us (1000%) margin, taken as a
// ratio below its lowest median; one host's interval is a ratio already.
TEST(Band, NoBandHasANegativeLowerBound) {
  std::vector<Observation> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(run_at(i, 5000 + 10 * i, 20, 20));
  BandContext several;
  several.several_hosts = true;
  const auto prior = band_of(runs, several, BandParameters{});
  EXPECT_GT(prior.lower.count(), 0);
  EXPECT_EQ(prior.lower.count(), 456);  // 5000 / (1 + 50000 / 5020)
  const auto evidence = band_of(runs, BandContext{}, BandParameters{});
  EXPECT_GT(evidence.lower.count(), 4000);
  EXPECT_LT(evidence.upper.count(), 5600);
}

TEST(Band, FailedAndInconclusiveRunsAreInconclusive) {
  auto failed = run_at(9, 500000);
  failed.status = core::RunStatus::RuntimeError;
  auto busy = run_at(9, 500000);
  busy.status = core::RunStatus::IncompleteEvidence;
  auto no_median = run_at(9, 0);
  for (const auto& run : {failed, busy, no_median}) {
    const auto verdict = judge(spread_baseline(), run, BandParameters{}, kTrusted);
    EXPECT_EQ(verdict.kind, VerdictKind::Inconclusive);
    EXPECT_FALSE(verdict.breach());
  }
}

TEST(Band, BaselineOrderDoesNotMatter) {
  auto baseline = spread_baseline();
  const auto forward = judge(baseline, run_at(9, 103300), BandParameters{}, kTrusted);
  std::reverse(baseline.begin(), baseline.end());
  const auto backward = judge(baseline, run_at(9, 103300), BandParameters{}, kTrusted);
  EXPECT_EQ(forward.kind, backward.kind);
  EXPECT_EQ(forward.band.lower, backward.band.lower);
  EXPECT_EQ(forward.band.upper, backward.band.upper);
}

}  // namespace
}  // namespace kernelwatch::detectors
