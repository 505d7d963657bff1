#include "detectors/key_detector.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "detectors/synthetic.hpp"
#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using testing::run_at;

DetectorParameters with_confirm(ConfirmPolicy confirm) {
  return testing::without_jitter(confirm);
}

// Feeds runs, returns the index of every run that triggered.
std::vector<std::size_t> triggers(KeyDetector& detector, const std::vector<Observation>& runs) {
  std::vector<std::size_t> fired;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (detector.observe(runs[i]).trigger) fired.push_back(i);
  }
  return fired;
}

// Eight runs alternating 100000 / 100500 ns: center 100250, 2% margin 2005, MAD 250 (3 x 1.4826
// x 250 = 1112 < 2005): band [97995, 102505].
std::vector<Observation> stable_history() {
  std::vector<Observation> runs;
  for (int i = 0; i < 8; ++i) runs.push_back(run_at(i, i % 2 == 0 ? 100000 : 100500));
  return runs;
}

TEST(KeyDetector, ConfirmNoneAlertsAtTheBreachingRun) {
  KeyDetector detector(with_confirm(ConfirmPolicy::None));
  auto runs = stable_history();
  runs.push_back(run_at(8, 110000));
  runs.push_back(run_at(9, 110200));
  const auto fired = triggers(detector, runs);
  ASSERT_EQ(fired, (std::vector<std::size_t>{8}));
}

TEST(KeyDetector, ConfirmNextAlertsAtTheAgreeingRunWithTheOnset) {
  KeyDetector detector(with_confirm(ConfirmPolicy::Next));
  for (const auto& run : stable_history()) ASSERT_FALSE(detector.observe(run).trigger);
  const auto breach = detector.observe(run_at(8, 110000));
  EXPECT_EQ(breach.role, RunRole::Pending);
  EXPECT_FALSE(breach.trigger);
  const auto confirm = detector.observe(run_at(9, 110200));
  EXPECT_EQ(confirm.role, RunRole::Confirmed);
  ASSERT_TRUE(confirm.trigger);
  EXPECT_EQ(confirm.trigger->run.external_id, "run-9");
  EXPECT_EQ(confirm.trigger->onset.external_id, "run-8");
  EXPECT_EQ(confirm.trigger->direction, Direction::Regression);
  EXPECT_EQ(confirm.trigger->verdict.band.upper.count(), 102505);
  EXPECT_EQ(confirm.trigger->verdict.band.lower.count(), 97995);
}

TEST(KeyDetector, ALoneOutlierIsNeverBaselineAndNeverConfirmed) {
  KeyDetector detector(with_confirm(ConfirmPolicy::Next));
  auto runs = stable_history();
  runs.push_back(run_at(8, 130000));  // outlier
  runs.push_back(run_at(9, 100200));  // back in band
  EXPECT_TRUE(triggers(detector, runs).empty());
  for (const auto& run : detector.segment()) EXPECT_NE(run.external_id, "run-8");
}

TEST(KeyDetector, OppositeBreachesDoNotConfirmEachOther) {
  KeyDetector detector(with_confirm(ConfirmPolicy::Next));
  auto runs = stable_history();
  runs.push_back(run_at(8, 110000));
  runs.push_back(run_at(9, 90000));
  EXPECT_TRUE(triggers(detector, runs).empty());
}

TEST(KeyDetector, AConfirmedStepRestartsTheBaselineAtTheNewLevel) {
  KeyDetector detector(with_confirm(ConfirmPolicy::None));
  auto runs = stable_history();
  for (int i = 8; i < 16; ++i) runs.push_back(run_at(i, 120000 + (i % 2) * 500));  // +20%
  const auto fired = triggers(detector, runs);
  EXPECT_EQ(fired, (std::vector<std::size_t>{8}));  // one alert, not one per run
  // The baseline now holds only the new level: a 10% drop from it is judged against it.
  for (const auto& run : detector.segment()) EXPECT_GE(run.median.count(), 120000);
  const auto next = detector.observe(run_at(16, 108000));
  EXPECT_EQ(next.verdict.kind, VerdictKind::Improvement);
  EXPECT_NEAR(next.verdict.relative_change, 108000.0 / 120250.0 - 1, 1e-9);
}

TEST(KeyDetector, AYoungStepThatReturnsIsAnExcursion) {
  KeyDetector detector(with_confirm(ConfirmPolicy::None));
  auto runs = stable_history();
  runs.push_back(run_at(8, 110000));
  runs.push_back(run_at(9, 110500));  // confirms: new segment
  for (const auto& run : runs) (void)detector.observe(run);
  const auto back = detector.observe(run_at(10, 100300));
  EXPECT_EQ(back.role, RunRole::Returned);
  EXPECT_EQ(back.verdict.kind, VerdictKind::InBand);
  for (const auto& run : detector.segment()) EXPECT_LT(run.median.count(), 105000);
}

TEST(KeyDetector, FailedAndInconclusiveRunsNeitherAlertNorBreakConfirmation) {
  KeyDetector detector(with_confirm(ConfirmPolicy::Next));
  for (const auto& run : stable_history()) (void)detector.observe(run);
  (void)detector.observe(run_at(8, 110000));
  auto failed = run_at(9, 0);
  failed.status = core::RunStatus::RuntimeError;
  auto busy = run_at(10, 150000);
  busy.status = core::RunStatus::IncompleteEvidence;
  EXPECT_EQ(detector.observe(failed).role, RunRole::Ignored);
  const auto ignored = detector.observe(busy);
  EXPECT_EQ(ignored.role, RunRole::Ignored);
  EXPECT_EQ(ignored.verdict.kind, VerdictKind::Inconclusive);
  EXPECT_FALSE(ignored.trigger);
  const auto confirm = detector.observe(run_at(11, 110300));
  ASSERT_TRUE(confirm.trigger);
  EXPECT_EQ(confirm.trigger->onset.external_id, "run-8");
}

TEST(KeyDetector, InsufficientDataNeverAlerts) {
  // Seeded short and noisy histories: any run judged insufficient_data must not trigger, under
  // either policy, and histories shorter than min_history with moves under 20% never alert.
  for (const auto confirm : {ConfirmPolicy::None, ConfirmPolicy::Next}) {
    for (std::uint64_t seed = 0; seed < 300; ++seed) {
      synthetic::SeriesSpec spec;
      spec.runs = 12;
      spec.between_run_sigma = 0.06;  // noisy: 6% between runs
      const auto series = synthetic::generate(spec, seed);
      KeyDetector detector(with_confirm(confirm));
      for (const auto& run : series.runs) {
        const auto step = detector.observe(run);
        if (step.verdict.kind == VerdictKind::InsufficientData) {
          EXPECT_FALSE(step.trigger) << "seed " << seed << " " << run.external_id;
        }
      }
    }
  }
  KeyDetector detector(with_confirm(ConfirmPolicy::None));
  EXPECT_TRUE(triggers(detector, testing::runs_of({100000, 115000, 90000, 118000})).empty());
}

TEST(KeyDetector, ReorderingRunsOlderThanTheWindowDoesNotChangeTheVerdict) {
  synthetic::SeriesSpec spec;
  spec.runs = 65;
  spec.host_offset = 0.015;
  spec.between_run_sigma = 0.001;
  const auto series = synthetic::generate(spec, 7);
  const Observation probe = run_at(80, series.runs.back().median.count() * 103 / 100);
  const auto verdict_of = [&](std::vector<Observation> runs) {
    // Keep the timestamps ascending: only which median sits where changes.
    for (std::size_t i = 0; i < runs.size(); ++i)
      runs[i].observed_at = testing::week(static_cast<int>(i));
    KeyDetector detector(with_confirm(ConfirmPolicy::None));
    for (const auto& run : runs) EXPECT_FALSE(detector.observe(run).trigger);
    return detector.observe(probe).verdict;
  };
  const auto original = verdict_of(series.runs);
  auto shuffled = series.runs;
  // The newest 45 runs stay in place: the baseline's 20, and the 20 runs before those whose
  // centres the residuals of the newest 20 (the noise memory) were measured against.
  std::reverse(shuffled.begin(), shuffled.begin() + 20);
  std::rotate(shuffled.begin(), shuffled.begin() + 7, shuffled.begin() + 20);
  const auto reordered = verdict_of(shuffled);
  EXPECT_EQ(original.kind, reordered.kind);
  EXPECT_EQ(original.band.lower, reordered.band.lower);
  EXPECT_EQ(original.band.upper, reordered.band.upper);
  EXPECT_EQ(original.band.center, reordered.band.center);
  EXPECT_EQ(original.baseline_runs, reordered.baseline_runs);
}

TEST(KeyDetector, SlowDriftIsADriftAlertNotAStep) {
  KeyDetector detector(with_confirm(ConfirmPolicy::None));
  std::vector<Observation> runs;
  for (int i = 0; i < 20; ++i) runs.push_back(run_at(i, 100000 + (i % 3) * 100));
  double level = 100000;
  for (int i = 20; i < 45; ++i) {
    level *= 1.003;
    runs.push_back(run_at(i, static_cast<std::int64_t>(level) + (i % 3) * 100));
  }
  std::optional<Trigger> first;
  for (const auto& run : runs) {
    auto step = detector.observe(run);
    if (step.trigger && !first) first = step.trigger;
  }
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, AlertKind::Drift);
  EXPECT_EQ(first->direction, Direction::Regression);
  EXPECT_GE(first->verdict.relative_change, 0.025);
}

TEST(KeyDetector, OperatorRebaselineAcceptsTheNewestRun) {
  KeyDetector detector(with_confirm(ConfirmPolicy::Next));
  for (const auto& run : stable_history()) (void)detector.observe(run);
  (void)detector.observe(run_at(8, 130000));
  detector.rebaseline();
  ASSERT_EQ(detector.segment().size(), 1u);
  EXPECT_EQ(detector.segment().front().external_id, "run-8");
  EXPECT_FALSE(detector.has_pending());
}

// A run that re-ran an older commit hides a real step for one run: a breach of 5% or more
// survives one run back in the band and is confirmed by the run after it.
TEST(KeyDetector, ALargeBreachSurvivesOneRunBackInTheBand) {
  KeyDetector detector(with_confirm(ConfirmPolicy::Next));
  for (const auto& run : stable_history()) ASSERT_FALSE(detector.observe(run).trigger);
  EXPECT_EQ(detector.observe(run_at(8, 112000)).role, RunRole::Pending);  // +11.7%
  const auto between = detector.observe(run_at(9, 100300));               // back, for one run
  EXPECT_FALSE(between.trigger);
  EXPECT_TRUE(detector.has_pending());
  const auto confirm = detector.observe(run_at(10, 112500));
  ASSERT_TRUE(confirm.trigger);
  EXPECT_EQ(confirm.role, RunRole::Confirmed);
  EXPECT_EQ(confirm.trigger->onset.external_id, "run-8");
  EXPECT_NE(confirm.trigger->explanation.find("confirmed two runs later"), std::string::npos)
      << confirm.trigger->explanation;
  // A small breach (+3%) does not survive a run back in the band.
  KeyDetector small(with_confirm(ConfirmPolicy::Next));
  for (const auto& run : stable_history()) ASSERT_FALSE(small.observe(run).trigger);
  EXPECT_EQ(small.observe(run_at(8, 103300)).role, RunRole::Pending);
  (void)small.observe(run_at(9, 100300));
  EXPECT_FALSE(small.has_pending());
  EXPECT_FALSE(small.observe(run_at(10, 103400)).trigger);  // a new breach, not a confirmation
}

// What a key visits and leaves, unconfirmed, is its noise: the band learns that side.
TEST(KeyDetector, AnUnconfirmedExcursionWidensTheBandOnItsSide) {
  KeyDetector detector(with_confirm(ConfirmPolicy::Next));
  for (const auto& run : stable_history()) (void)detector.observe(run);
  EXPECT_EQ(detector.observe(run_at(8, 100200)).verdict.band.upper.count(), 102505);
  int index = 9;
  // Lone +8% excursions, each followed by runs back at the level: the first is a breach (that
  // nobody confirms), and once the key has visited that level often enough it is its noise.
  EXPECT_EQ(detector.observe(run_at(index++, 108300)).role, RunRole::Pending);
  for (int i = 0; i < 4; ++i) {
    (void)detector.observe(run_at(index++, 100250));
    (void)detector.observe(run_at(index++, 100300));
    (void)detector.observe(run_at(index++, 108300));
  }
  const auto after = detector.observe(run_at(index++, 100200)).verdict;
  EXPECT_GT(after.band.upper.count(), 108300) << after.explanation;  // +8% is inside now
  EXPECT_GT(after.band.lower.count(), 98000) << after.explanation;   // the other side is not
  EXPECT_NE(after.band_reason.find("own excursions"), std::string::npos) << after.band_reason;
  EXPECT_EQ(detector.observe(run_at(index++, 108300)).verdict.kind, VerdictKind::InBand);
}

// A trusted key (15 judged runs) on a quiet series: a 2% step is judged against the 1% floor.
TEST(KeyDetector, ATrustedQuietKeyFindsATwoPercentStep) {
  DetectorParameters parameters;  // the defaults, jitter prior included
  parameters.confirm = ConfirmPolicy::Next;
  KeyDetector detector(parameters);
  // 10 ms, +-0.1%: the jitter prior (50 us = 0.5%) is under the 2% young floor.
  for (int i = 0; i < 20; ++i) {
    ASSERT_FALSE(detector.observe(run_at(i, 10'000'000 + (i % 2) * 10'000)).trigger);
  }
  EXPECT_EQ(detector.observe(run_at(20, 10'205'000)).role, RunRole::Pending);
  const auto confirm = detector.observe(run_at(21, 10'210'000));
  ASSERT_TRUE(confirm.trigger) << confirm.verdict.explanation;
  EXPECT_EQ(confirm.trigger->direction, Direction::Regression);
  // Young (8 runs), the same step is inside the 2% prior.
  KeyDetector young(parameters);
  for (int i = 0; i < 8; ++i) (void)young.observe(run_at(i, 10'000'000 + (i % 2) * 10'000));
  EXPECT_EQ(young.observe(run_at(8, 10'205'000)).verdict.kind, VerdictKind::InBand);
}

// Where a young key's runs ran decides its band: eight 30 us runs on one host judge a +30% run
// (and its rerun) from their own evidence; the same runs from two named hosts, or from a source
// whose runs span hosts they do not name (Liger's CI), keep the 50 us cross-host prior (+167%).
TEST(KeyDetector, AYoungKeyKeepsTheCrossHostPriorOnlyWhenItsRunsComeFromSeveralHosts) {
  const auto young_step_fires = [](const std::function<void(Observation&, int)>& place) {
    DetectorParameters parameters;
    parameters.confirm = ConfirmPolicy::Next;
    KeyDetector detector(parameters);
    std::vector<Observation> runs;
    for (int i = 0; i < 8; ++i) runs.push_back(run_at(i, 30000 + 60 * (i % 3), 90, 120));
    runs.push_back(run_at(8, 39000, 120, 160));
    runs.push_back(run_at(9, 39100, 120, 160));
    for (int i = 0; i < 10; ++i) place(runs[static_cast<std::size_t>(i)], i);
    return triggers(detector, runs) == std::vector<std::size_t>{9};
  };
  EXPECT_TRUE(young_step_fires([](Observation& run, int) {
    run.placement = core::Placement{"gpu-host-1", "", "", ""};
  }));
  EXPECT_TRUE(young_step_fires([](Observation&, int) {}));  // a source that names no host
  EXPECT_FALSE(young_step_fires([](Observation& run, int i) {
    run.placement = core::Placement{i % 2 == 0 ? "ci-a" : "ci-b", "", "", ""};
  }));
  EXPECT_FALSE(young_step_fires([](Observation& run, int) { run.unnamed_hosts = true; }));
}

}  // namespace
}  // namespace kernelwatch::detectors
