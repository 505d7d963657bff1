#include "detectors/synthetic.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors::synthetic {
namespace {

std::vector<double> relative_medians(const SyntheticSeries& series, double level) {
  std::vector<double> values;
  for (const auto& run : series.runs) {
    if (run.judgeable()) values.push_back(static_cast<double>(run.median.count()) / level - 1);
  }
  return values;
}

TEST(Synthetic, RandomIsDeterministicAndRoughlyNormal) {
  Random a(42), b(42), c(43);
  double sum = 0, squares = 0;
  bool differs = false;
  for (int i = 0; i < 20000; ++i) {
    const double x = a.normal();
    EXPECT_EQ(x, b.normal());
    differs = differs || x != c.normal();
    sum += x;
    squares += x * x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / 20000, 0, 0.03);
  EXPECT_NEAR(squares / 20000, 1, 0.04);
  Random u(1);
  for (int i = 0; i < 1000; ++i) {
    const double x = u.uniform();
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 1);
  }
}

TEST(Synthetic, StableSeriesHasTheRequestedSpread) {
  SeriesSpec spec;
  spec.runs = 4000;
  spec.between_run_sigma = 0.002;
  spec.within_run_width = 0.003;
  const auto series = generate(spec, 11);
  const auto values = relative_medians(series, spec.level_ns);
  EXPECT_NEAR(median(values), 0, 0.0002);
  EXPECT_NEAR(1.4826 * median_absolute_deviation(values), 0.002, 0.0002);
  std::vector<double> widths;
  for (const auto& run : series.runs) {
    widths.push_back(static_cast<double>((run.p80_or_median() - run.p20_or_median()).count()) /
                     static_cast<double>(run.median.count()));
  }
  EXPECT_NEAR(median(widths), 0.003, 0.0002);
  for (std::size_t i = 1; i < series.runs.size(); ++i) {
    EXPECT_EQ(series.runs[i].observed_at - series.runs[i - 1].observed_at, std::chrono::days(7));
  }
}

TEST(Synthetic, BimodalHostsAreOffsetAndMixed) {
  SeriesSpec spec;
  spec.runs = 4000;
  spec.between_run_sigma = 0.001;
  spec.host_offset = 0.015;
  const auto values = relative_medians(generate(spec, 5), spec.level_ns);
  std::size_t slow = 0;
  for (double v : values) slow += v > 0.0075 ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(slow) / static_cast<double>(values.size()), 0.5, 0.03);
  EXPECT_NEAR(quantile(values, 0.9) - quantile(values, 0.1), 0.015, 0.003);
}

TEST(Synthetic, StepDriftOutliersAndGapsAreLabelled) {
  SeriesSpec spec;
  spec.runs = 60;
  spec.between_run_sigma = 0;
  spec.step_at = 40;
  spec.step = -0.10;
  auto series = generate(spec, 9);
  EXPECT_EQ(series.labels[39], RunLabel::Stable);
  EXPECT_EQ(series.labels[40], RunLabel::StepOnset);
  EXPECT_EQ(series.labels[41], RunLabel::AfterStep);
  EXPECT_EQ(series.runs[39].median.count(), 1000000);
  EXPECT_EQ(series.runs[40].median.count(), 900000);

  spec = SeriesSpec{};
  spec.between_run_sigma = 0;
  spec.drift_from = 10;
  spec.drift_per_run = 0.003;
  series = generate(spec, 9);
  EXPECT_EQ(series.labels[10], RunLabel::Drifting);
  EXPECT_NEAR(static_cast<double>(series.runs[29].median.count()), 1e6 * std::pow(1.003, 20), 1);

  spec = SeriesSpec{};
  spec.runs = 5000;
  spec.outlier_probability = 0.03;
  spec.failed_probability = 0.05;
  spec.inconclusive_probability = 0.05;
  spec.gap_probability = 0.1;
  series = generate(spec, 13);
  std::size_t outliers = 0, failed = 0, inconclusive = 0, gaps = 0;
  for (std::size_t i = 0; i < series.runs.size(); ++i) {
    outliers += series.labels[i] == RunLabel::Outlier ? 1 : 0;
    if (series.labels[i] == RunLabel::Failed) {
      ++failed;
      EXPECT_EQ(series.runs[i].status, core::RunStatus::RuntimeError);
      EXPECT_FALSE(series.runs[i].judgeable());
    }
    inconclusive += series.labels[i] == RunLabel::Inconclusive ? 1 : 0;
    if (i > 0)
      gaps += series.runs[i].observed_at - series.runs[i - 1].observed_at > std::chrono::days(7);
  }
  EXPECT_NEAR(static_cast<double>(outliers) / 5000, 0.03 * 0.9, 0.008);  // not on failed runs
  EXPECT_NEAR(static_cast<double>(failed) / 5000, 0.05, 0.01);
  EXPECT_NEAR(static_cast<double>(inconclusive) / 5000, 0.05, 0.01);
  EXPECT_NEAR(static_cast<double>(gaps) / 5000, 0.1, 0.015);
}

TEST(Synthetic, SameSeedSameSeries) {
  SeriesSpec spec;
  spec.host_offset = 0.015;
  const auto a = generate(spec, 99);
  const auto b = generate(spec, 99);
  const auto c = generate(spec, 100);
  ASSERT_EQ(a.runs.size(), b.runs.size());
  bool differs = false;
  for (std::size_t i = 0; i < a.runs.size(); ++i) {
    EXPECT_EQ(a.runs[i].median, b.runs[i].median);
    EXPECT_EQ(a.runs[i].p20, b.runs[i].p20);
    differs = differs || a.runs[i].median != c.runs[i].median;
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace kernelwatch::detectors::synthetic
