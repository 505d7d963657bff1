#include "detectors/drift.hpp"

#include <gtest/gtest.h>

#include <random>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using testing::run_at;

std::vector<Observation> ramp(int count, double per_run, std::int64_t wiggle) {
  std::vector<Observation> runs;
  double level = 100000;
  for (int i = 0; i < count; ++i) {
    runs.push_back(run_at(i, static_cast<std::int64_t>(level) + (i % 2 == 0 ? wiggle : -wiggle)));
    level *= 1 + per_run;
  }
  return runs;
}

TEST(Drift, ASteadyRampIsDetectedWithItsSize) {
  const auto result = detect_drift(ramp(20, 0.003, 50), DriftParameters{});
  EXPECT_TRUE(result.detected);
  EXPECT_EQ(result.direction, Direction::Regression);
  EXPECT_NEAR(result.relative_change, 0.058, 0.004);  // 19 steps of 0.3%
  EXPECT_GT(result.z, 4.0);
  EXPECT_EQ(result.runs, 20u);
}

TEST(Drift, DownwardRampIsAnImprovement) {
  const auto result = detect_drift(ramp(20, -0.003, 50), DriftParameters{});
  EXPECT_TRUE(result.detected);
  EXPECT_EQ(result.direction, Direction::Improvement);
}

TEST(Drift, NeedsEnoughRunsASignificantTrendAndASizableMove) {
  EXPECT_FALSE(detect_drift(ramp(9, 0.01, 0), DriftParameters{}).detected);  // under min_runs
  // Significant but tiny: 19 x 0.05% = 1% < 2.5%.
  EXPECT_FALSE(detect_drift(ramp(20, 0.0005, 0), DriftParameters{}).detected);
  // Large wiggle, no trend.
  EXPECT_FALSE(detect_drift(ramp(20, 0.0, 3000), DriftParameters{}).detected);
}

TEST(Drift, OnlyTheNewestWindowCounts) {
  auto runs = ramp(20, 0.003, 50);
  std::vector<Observation> flat;
  for (int i = 0; i < 20; ++i) flat.push_back(run_at(100 + i, 200000 + (i % 2) * 100));
  runs.insert(runs.end(), flat.begin(), flat.end());
  EXPECT_FALSE(detect_drift(runs, DriftParameters{}).detected);
}

// The remembered count is the pair count of the window it is given, whatever the order of the
// windows: slid by one, grown by one, reset, with ties among them and without.
TEST(Drift, TheRememberedTrendIsTheMannKendallOfEachWindow) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> value(0, 40);  // few distinct values: many ties
  std::uniform_int_distribution<int> move(0, 9);
  std::vector<double> series;
  for (int i = 0; i < 3000; ++i) series.push_back(i % 3 == 0 ? value(random) : 1000 + i);
  DriftMemory memory;
  std::size_t first = 0;
  std::size_t last = 0;  // the window is series[first, last)
  int checked = 0;
  while (last < series.size()) {
    const int m = move(random);
    if (m < 6) {
      ++last;
      if (last - first > 20) ++first;  // slides once full
    } else if (m < 8) {
      first = last - std::min<std::size_t>(last - first, 2);  // a new segment of two runs
    } else {
      first = last > 12 ? last - 12 : 0;  // an unrelated window
    }
    const std::span<const double> window(series.data() + first, last - first);
    const auto expected = mann_kendall(window);
    const auto got = remembered_trend(window, memory);
    ASSERT_EQ(got.s, expected.s) << first << ".." << last;
    ASSERT_EQ(got.z, expected.z) << first << ".." << last;
    ++checked;
  }
  EXPECT_GT(checked, 3000);
}

}  // namespace
}  // namespace kernelwatch::detectors
