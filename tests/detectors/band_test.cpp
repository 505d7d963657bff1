#include "detectors/band.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using testing::run_at;

// Five runs with medians 99000..101000 ns, p20 = median - 300, p80 = median + 400.
// center 100000; MAD 500 -> 1.4826 * 500 * 3 = 2223.9 > 2% of 100000 = 2000, so the margin is
// 2223.9: band [99000 - 2223.9, 101000 + 2223.9] = [96776.1, 103223.9] -> [96776, 103224].
std::vector<Observation> spread_baseline() {
  std::vector<Observation> runs;
  const std::int64_t medians[] = {100000, 101000, 99000, 100500, 99500};
  for (int i = 0; i < 5; ++i) runs.push_back(run_at(i, medians[i], 300, 400));
  return runs;
}

// Five identical runs at 200000 ns: MAD 0, so the 2% margin (4000) decides: [196000, 204000].
std::vector<Observation> tight_baseline(std::int64_t below = 0, std::int64_t above = 0) {
  std::vector<Observation> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(run_at(i, 200000, below, above));
  return runs;
}

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
      {"upper edge is inside", spread_baseline(), 103224, VerdictKind::InBand, 96776, 103224,
       0.03224},
      {"one ns above the edge", spread_baseline(), 103225, VerdictKind::Regression, 96776, 103224,
       0.03225},
      {"lower edge is inside", spread_baseline(), 96776, VerdictKind::InBand, 96776, 103224,
       -0.03224},
      {"one ns below the edge", spread_baseline(), 96775, VerdictKind::Improvement, 96776, 103224,
       -0.03225},
      {"ten percent slower", spread_baseline(), 110000, VerdictKind::Regression, 96776, 103224,
       0.10},
      {"min margin decides", tight_baseline(), 204001, VerdictKind::Regression, 196000, 204000,
       0.020005},
      {"min margin keeps 2% in", tight_baseline(), 204000, VerdictKind::InBand, 196000, 204000,
       0.02},
      // Wide runs: the medians of p20 (195000) and p80 (210000) are outside the 2% margin.
      {"p80 widens the band", tight_baseline(5000, 10000), 209000, VerdictKind::InBand, 195000,
       210000, 0.045},
      {"p20 widens the band", tight_baseline(5000, 10000), 195500, VerdictKind::InBand, 195000,
       210000, -0.0225},
      {"beyond the p80", tight_baseline(5000, 10000), 210001, VerdictKind::Regression, 195000,
       210000, 0.050005},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto verdict = judge(c.baseline, run_at(9, c.median), BandParameters{});
    EXPECT_EQ(verdict.kind, c.expected);
    ASSERT_TRUE(verdict.has_band);
    EXPECT_EQ(verdict.band.lower.count(), c.lower);
    EXPECT_EQ(verdict.band.upper.count(), c.upper);
    EXPECT_NEAR(verdict.relative_change, c.relative_change, 1e-9);
    EXPECT_EQ(verdict.baseline_external_ids.size(), c.baseline.size());
    EXPECT_FALSE(verdict.explanation.empty());
  }
}

TEST(Band, ShortBaselinesJudgeOnlyBigSteps) {
  std::vector<Observation> three;
  for (int i = 0; i < 3; ++i) three.push_back(run_at(i, 100000));
  const BandParameters parameters;  // min_history 5, big steps (20%) from 2 runs
  EXPECT_EQ(judge(three, run_at(5, 115000), parameters).kind, VerdictKind::InsufficientData);
  EXPECT_EQ(judge(three, run_at(5, 119999), parameters).kind, VerdictKind::InsufficientData);
  const auto big = judge(three, run_at(5, 125000), parameters);
  EXPECT_EQ(big.kind, VerdictKind::Regression);
  EXPECT_EQ(big.band.lower.count(), 98000);
  EXPECT_EQ(big.band.upper.count(), 102000);
  EXPECT_EQ(judge(three, run_at(5, 70000), parameters).kind, VerdictKind::Improvement);
  // One run is never enough, whatever the change.
  EXPECT_EQ(judge(std::vector<Observation>{run_at(0, 100000)}, run_at(5, 300000), parameters).kind,
            VerdictKind::InsufficientData);
  EXPECT_EQ(judge({}, run_at(5, 300000), parameters).kind, VerdictKind::InsufficientData);
}

TEST(Band, FailedAndInconclusiveRunsAreInconclusive) {
  auto failed = run_at(9, 500000);
  failed.status = core::RunStatus::Failed;
  auto busy = run_at(9, 500000);
  busy.status = core::RunStatus::Inconclusive;
  auto no_median = run_at(9, 0);
  for (const auto& run : {failed, busy, no_median}) {
    const auto verdict = judge(spread_baseline(), run, BandParameters{});
    EXPECT_EQ(verdict.kind, VerdictKind::Inconclusive);
    EXPECT_FALSE(verdict.breach());
  }
}

TEST(Band, BaselineOrderDoesNotMatter) {
  auto baseline = spread_baseline();
  const auto forward = judge(baseline, run_at(9, 103300), BandParameters{});
  std::reverse(baseline.begin(), baseline.end());
  const auto backward = judge(baseline, run_at(9, 103300), BandParameters{});
  EXPECT_EQ(forward.kind, backward.kind);
  EXPECT_EQ(forward.band.lower, backward.band.lower);
  EXPECT_EQ(forward.band.upper, backward.band.upper);
}

}  // namespace
}  // namespace kernelwatch::detectors
