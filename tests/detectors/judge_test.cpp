// Judging candidates on a copy of a key's state (detectors/judge.hpp): two runs confirm a breach
// as the daemon's rerun, one run is judged alone, an unchanged run is in band, and the key's own
// state never sees a candidate.
#include "detectors/judge.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace kernelwatch::detectors {
namespace {

Observation run_at(int minute, std::int64_t median_ns) {
  Observation o;
  o.external_id = "run-" + std::to_string(minute);
  o.observed_at = core::Timestamp{} + std::chrono::hours(24 * 400) + std::chrono::minutes(minute);
  o.median = std::chrono::nanoseconds(median_ns);
  o.p20 = std::chrono::nanoseconds(median_ns - median_ns / 200);
  o.p80 = std::chrono::nanoseconds(median_ns + median_ns / 200);
  return o;
}

KeyDetector trained() {
  KeyDetector d{DetectorParameters{}};
  for (int i = 0; i < 30; ++i) {
    (void)d.observe(run_at(i, 100'000 + static_cast<std::int64_t>(300 * std::sin(i * 1.7))));
  }
  return d;
}

TEST(Judge, TwoSlowRunsConfirmARegressionAndTheKeyNeverSeesThem) {
  const KeyDetector state = trained();
  const std::size_t before = state.segment().size();
  const std::vector<Observation> slow{run_at(40, 130'000), run_at(41, 131'000)};
  const CandidateJudgement j = judge_candidate(&state, DetectorParameters{}, slow);
  EXPECT_EQ(j.verdict.kind, VerdictKind::Regression) << j.explanation;
  EXPECT_EQ(j.confirmation, Confirmation::Confirmed) << j.explanation;
  EXPECT_EQ(j.deciding_run, 1U);
  EXPECT_NE(j.explanation.find("confirmed by candidate run 2"), std::string::npos) << j.explanation;
  EXPECT_EQ(state.segment().size(), before);
  EXPECT_FALSE(state.has_pending());
}

TEST(Judge, OneRunIsJudgedAloneAndASecondInBandDoesNotConfirm) {
  const KeyDetector state = trained();
  const CandidateJudgement alone =
      judge_candidate(&state, DetectorParameters{}, std::vector<Observation>{run_at(40, 130'000)});
  EXPECT_EQ(alone.verdict.kind, VerdictKind::Regression);
  EXPECT_EQ(alone.confirmation, Confirmation::Unconfirmed);
  EXPECT_NE(alone.explanation.find("judged alone"), std::string::npos) << alone.explanation;
  // A small breach and then a run back in band: an outlier, not confirmed.
  const CandidateJudgement outlier =
      judge_candidate(&state, DetectorParameters{},
                      std::vector<Observation>{run_at(40, 104'000), run_at(41, 100'100)});
  EXPECT_EQ(outlier.confirmation, Confirmation::NotConfirmed) << outlier.explanation;
  EXPECT_NE(outlier.verdict.kind, VerdictKind::Regression) << outlier.explanation;
  // A large breach survives one run back in band (the daemon keeps it pending): unconfirmed.
  const CandidateJudgement pending =
      judge_candidate(&state, DetectorParameters{},
                      std::vector<Observation>{run_at(40, 130'000), run_at(41, 100'100)});
  EXPECT_EQ(pending.confirmation, Confirmation::Unconfirmed) << pending.explanation;
  EXPECT_EQ(pending.deciding_run, 0U);
  const CandidateJudgement same =
      judge_candidate(&state, DetectorParameters{}, std::vector<Observation>{run_at(40, 100'050)});
  EXPECT_EQ(same.verdict.kind, VerdictKind::InBand) << same.explanation;
  EXPECT_EQ(same.confirmation, Confirmation::NotNeeded);
}

TEST(Judge, AKeyWithoutHistoryHasTooLittleDataAndAnOlderRunIsJudgedAfterTheNewest) {
  const CandidateJudgement fresh =
      judge_candidate(nullptr, DetectorParameters{}, std::vector<Observation>{run_at(0, 5'000)});
  EXPECT_EQ(fresh.verdict.kind, VerdictKind::InsufficientData);
  const KeyDetector state = trained();
  const CandidateJudgement old = judge_candidate(&state, DetectorParameters{},
                                                 std::vector<Observation>{run_at(-100, 100'000)});
  EXPECT_EQ(old.verdict.kind, VerdictKind::InBand) << old.explanation;
}

}  // namespace
}  // namespace kernelwatch::detectors

namespace kernelwatch::detectors {
namespace {

TEST(Judge, ADriftAlertAtARunInBandIsTheVerdict) {
  // A slow creep (+0.3% a run) over candidate runs that each stay near the band: the detector
  // raises a drift alert at an accepted run, and the judgement is that alert, not "in band".
  KeyDetector state{DetectorParameters{}};
  for (int i = 0; i < 20; ++i) (void)state.observe(run_at(i, 100'000 + (i % 3) * 100));
  std::vector<Observation> creep;
  double level = 100'000;
  for (int i = 20; i < 45; ++i) {
    level *= 1.003;
    creep.push_back(run_at(i, static_cast<std::int64_t>(level) + (i % 3) * 100));
  }
  const CandidateJudgement j = judge_candidate(&state, DetectorParameters{}, creep);
  ASSERT_TRUE(j.steps[j.deciding_run].trigger.has_value()) << j.explanation;
  EXPECT_EQ(j.verdict.kind, VerdictKind::Regression) << j.explanation;
  EXPECT_LT(j.deciding_run, creep.size() - 1) << "the first alert decides, not the last run";
}

}  // namespace
}  // namespace kernelwatch::detectors
