// Noise must not blind a key (issue #25 item 3): a few outliers may widen a key's band, never
// hide a level change that persists (BandParameters::persist_*); and a step much larger than a
// noisy series' own spread is found within two runs. Seeded synthetic series through the real
// KeyDetector, each checked with the persistence test off too, so each test shows what it adds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "detectors/key_detector.hpp"
#include "detectors/synthetic.hpp"
#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using testing::run_at;

DetectorParameters parameters(ConfirmPolicy confirm, bool persistence = true) {
  DetectorParameters p;
  p.confirm = confirm;
  if (!persistence) p.band.persist_runs = 0;
  return p;
}

// The probe: a 30 ms key (0.5% noise) with isolated +50% outliers, then two outliers
// one run apart, then a sustained +40% regression from `sustained_from` on.
std::vector<Observation> probe_history(std::size_t& sustained_from) {
  std::vector<Observation> runs;
  int i = 0;
  const auto add = [&](double level) {
    const double noise = 1 + 0.005 * std::sin(i * 1.7);
    runs.push_back(run_at(i, static_cast<std::int64_t>(30e6 * level * noise)));
    ++i;
  };
  for (int k = 0; k < 20; ++k) add(1.0);
  for (int k = 0; k < 3; ++k) {  // isolated outliers, four runs apart
    add(1.5);
    for (int n = 0; n < 4; ++n) add(1.0);
  }
  add(1.5);  // the double outlier: two +50% runs one run apart
  add(1.0);
  add(1.5);
  for (int n = 0; n < 3; ++n) add(1.0);
  sustained_from = runs.size();
  for (int k = 0; k < 8; ++k) add(1.4);
  return runs;
}

struct FirstAlert {
  std::size_t at = 0;
  Trigger trigger;
};

// The first regression step alert at or after `from`.
std::optional<FirstAlert> first_regression(KeyDetector& detector,
                                           const std::vector<Observation>& runs, std::size_t from) {
  std::optional<FirstAlert> found;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto step = detector.observe(runs[i]);
    if (i >= from && !found && step.trigger && step.trigger->kind == AlertKind::Step &&
        step.trigger->direction == Direction::Regression) {
      found = FirstAlert{i, *step.trigger};
    }
  }
  return found;
}

TEST(Persistence, TwoOutliersOneRunApartNeverHideASustainedRegression) {
  for (const auto confirm : {ConfirmPolicy::None, ConfirmPolicy::Next}) {
    SCOPED_TRACE(confirm == ConfirmPolicy::None ? "confirm none" : "confirm next");
    std::size_t sustained = 0;
    const auto runs = probe_history(sustained);
    // Without the persistence test the outliers' excursions widen the band over the new level:
    // it never alerts and becomes the baseline (what the probe saw).
    KeyDetector blind(parameters(confirm, false));
    EXPECT_FALSE(first_regression(blind, runs, sustained)) << "the probe's failure did not show";

    KeyDetector detector(parameters(confirm));
    const auto fired = first_regression(detector, runs, sustained);
    ASSERT_TRUE(fired);
    EXPECT_EQ(fired->at, sustained + 2);  // the third run at the new level
    EXPECT_EQ(fired->trigger.onset.external_id, runs[sustained].external_id);
    EXPECT_NEAR(fired->trigger.verdict.relative_change, 0.40, 0.02);
    EXPECT_NE(fired->trigger.explanation.find("a level change that persists"), std::string::npos)
        << fired->trigger.explanation;
    // Its band is the old level's without the excursions and the outliers.
    EXPECT_LT(fired->trigger.verdict.band.upper.count(), 31'000'000);
    EXPECT_GT(fired->trigger.verdict.band.lower.count(), 29'000'000);
  }
}

TEST(Persistence, TheNewLevelIsTheBaselineAndAReturnEndsIt) {
  std::size_t sustained = 0;
  auto runs = probe_history(sustained);
  // Two more runs at the new level, then back at the old one.
  for (int k = 0; k < 2; ++k) {
    runs.push_back(run_at(static_cast<int>(runs.size()), static_cast<std::int64_t>(30e6)));
  }
  KeyDetector detector(parameters(ConfirmPolicy::Next));
  std::vector<KeyStep> steps;
  for (const auto& run : runs) steps.push_back(detector.observe(run));
  ASSERT_TRUE(steps[sustained + 2].trigger);
  EXPECT_EQ(steps[sustained + 2].role, RunRole::Confirmed);
  // The runs at the new level after it are its baseline: in band, no second alert.
  for (std::size_t i = sustained + 3; i < sustained + 8; ++i) {
    EXPECT_FALSE(steps[i].trigger) << i << ": " << steps[i].verdict.explanation;
  }
  // Back at 30 ms: the old level's band takes it (the step ends with the return).
  const auto& back = steps[sustained + 8];
  EXPECT_TRUE(back.role == RunRole::Returned || back.verdict.kind == VerdictKind::Improvement)
      << back.verdict.explanation;
}

// Seeded series whose runs move about 19% from one to the next (the scorer's spread: the 75th
// percentile of |run-to-run change|; relative normal noise of 12%), then a +59% step at run 40.
// The step counts where data/liger/other_kernels/score.py would count it: the median of runs
// 40-42 at least 10% and more than twice the spread beyond that of runs 37-39, every one of
// them beyond every one of those. Found = an alert whose level began at the step, at run 40, 41
// or 42 ("within two runs").
TEST(Persistence, AStepMuchLargerThanANoisySeriesSpreadIsFoundWithinTwoRuns) {
  synthetic::SeriesSpec spec;
  spec.runs = 50;
  spec.between_run_sigma = 0.12;
  spec.within_run_width = 0.05;
  spec.step_at = 40;
  spec.step = 0.59;
  int series = 0;
  int found = 0;
  int found_without = 0;
  std::vector<double> spreads;
  const auto median3 = [](double a, double b, double c) {
    return std::max(std::min(a, b), std::min(std::max(a, b), c));
  };
  for (int seed = 1; seed <= 300; ++seed) {
    const auto generated = synthetic::generate(spec, static_cast<std::uint64_t>(seed));
    const auto& runs = generated.runs;
    const auto m = [&](std::size_t i) { return static_cast<double>(runs[i].median.count()); };
    std::vector<double> changes;
    for (std::size_t i = 1; i < runs.size(); ++i) changes.push_back(std::abs(m(i) / m(i - 1) - 1));
    std::sort(changes.begin(), changes.end());
    const double spread = changes[(changes.size() - 1) * 3 / 4];
    spreads.push_back(spread);
    const std::size_t j = spec.step_at;
    const double move =
        median3(m(j), m(j + 1), m(j + 2)) / median3(m(j - 3), m(j - 2), m(j - 1)) - 1;
    const bool apart =
        std::min({m(j), m(j + 1), m(j + 2)}) > std::max({m(j - 3), m(j - 2), m(j - 1)});
    if (move < 0.10 || move <= 2 * spread || !apart) continue;
    ++series;
    const auto found_by = [&](bool persistence) {
      KeyDetector detector(parameters(ConfirmPolicy::Next, persistence));
      bool hit = false;
      for (std::size_t i = 0; i <= j + 2; ++i) {
        const auto step = detector.observe(runs[i]);
        hit = hit || (i >= j && step.trigger && step.trigger->direction == Direction::Regression &&
                      step.trigger->onset.observed_at >= runs[j].observed_at);
      }
      return hit;
    };
    found += found_by(true) ? 1 : 0;
    found_without += found_by(false) ? 1 : 0;
  }
  std::sort(spreads.begin(), spreads.end());
  // The series are as noisy as the issue's: a median spread of about 19%.
  EXPECT_NEAR(spreads[spreads.size() / 2], 0.19, 0.03);
  ASSERT_GE(series, 150);
  // The band finds them (the persistence test needs no part in it) and persistence loses none.
  EXPECT_GE(found, series * 97 / 100) << "of " << series;
  EXPECT_GE(found, found_without);
  std::printf("noisy +59%% steps: %d series, found within two runs %d (without persistence %d)\n",
              series, found, found_without);
}

// The persistence test adds no alert where nothing persists: stable noisy series, lone
// outliers, a key alternating between two hosts 3% apart, and slow drift.
TEST(Persistence, NoPersistenceAlertWithoutALevelChange) {
  const auto count = [](const synthetic::SeriesSpec& spec, bool persistence) {
    int alerts = 0;
    for (int seed = 1; seed <= 300; ++seed) {
      const auto series = synthetic::generate(spec, static_cast<std::uint64_t>(seed));
      KeyDetector detector(parameters(ConfirmPolicy::Next, persistence));
      for (const auto& run : series.runs) {
        const auto step = detector.observe(run);
        alerts += step.trigger && step.trigger->explanation.find("persists") != std::string::npos;
      }
    }
    return alerts;
  };
  synthetic::SeriesSpec noisy;
  noisy.runs = 60;
  noisy.between_run_sigma = 0.12;
  synthetic::SeriesSpec outliers;
  outliers.runs = 60;
  outliers.outlier_probability = 0.05;
  outliers.outlier_size = 0.5;
  synthetic::SeriesSpec hosts;
  hosts.runs = 60;
  hosts.host_offset = 0.03;
  hosts.host_probability = 0.3;
  for (const auto& spec : {noisy, outliers, hosts}) {
    EXPECT_EQ(count(spec, true), 0) << "sigma " << spec.between_run_sigma << " outliers "
                                    << spec.outlier_probability << " hosts " << spec.host_offset;
  }
}

}  // namespace
}  // namespace kernelwatch::detectors
