#include "detectors/controls.hpp"

#include <gtest/gtest.h>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using namespace std::chrono_literals;
using testing::run_at;
using testing::week;

KeyLabels key(const std::string& provider, const std::string& workload = "w",
              const std::string& benchmark = "tvd/forward") {
  return KeyLabels{benchmark,     provider,   workload,
                   "nvidia-h100", "protocol", benchmark + "/" + provider + "/" + workload};
}

// A verdict with a band centred on `center` reaching +-5%, for a run `change` away from it.
Verdict verdict(std::int64_t center, double change) {
  Verdict v;
  v.has_band = true;
  v.band.center = std::chrono::nanoseconds(center);
  v.band.lower = std::chrono::nanoseconds(center * 95 / 100);
  v.band.upper = std::chrono::nanoseconds(center * 105 / 100);
  v.relative_change = change;
  const auto median = static_cast<double>(center) * (1 + change);
  v.kind = median > static_cast<double>(v.band.upper.count())   ? VerdictKind::Regression
           : median < static_cast<double>(v.band.lower.count()) ? VerdictKind::Improvement
                                                                : VerdictKind::InBand;
  return v;
}

// A run of the key at week `index` (plus minutes), `change` against a centre of `center`.
void record(Controls& controls, const KeyLabels& k, int index, std::int64_t center, double change,
            std::chrono::minutes offset = 0min) {
  Observation run =
      run_at(index, static_cast<std::int64_t>(static_cast<double>(center) * (1 + change)));
  run.observed_at += offset;
  controls.record(k, run, verdict(center, change));
}

Trigger step(const KeyLabels& /*key*/, int onset_week, std::int64_t center, double change,
             std::chrono::minutes offset = 0min) {
  Trigger t;
  t.kind = AlertKind::Step;
  t.direction = change > 0 ? Direction::Regression : Direction::Improvement;
  t.onset =
      run_at(onset_week, static_cast<std::int64_t>(static_cast<double>(center) * (1 + change)));
  t.onset.observed_at += offset;
  t.run = t.onset;
  t.verdict = verdict(center, change);
  return t;
}

TEST(Controls, AReferenceWhoseSubjectMovedTheSameWayIsTheEnvironments) {
  Controls controls(ControlParameters{});
  record(controls, key("liger"), 3, 1'000'000, 0.30, 5min);
  record(controls, key("torch"), 3, 2'000'000, 0.20, 9min);
  const auto why =
      controls.environment_reason(key("torch"), step(key("torch"), 3, 2'000'000, 0.20, 9min));
  ASSERT_TRUE(why);
  EXPECT_NE(why->reason.find("its subject liger moved the same way (+30.0%)"), std::string::npos)
      << why->reason;
  EXPECT_EQ(why->incident, "nvidia-h100@" + core::format_timestamp(week(3) + 5min) + "/regression");
  // Another workload's subject is no counterpart.
  Controls other(ControlParameters{});
  record(other, key("liger", "w2"), 3, 1'000'000, 0.30);
  record(other, key("torch"), 3, 2'000'000, 0.20);
  EXPECT_FALSE(other.environment_reason(key("torch"), step(key("torch"), 3, 2'000'000, 0.20)));
}

TEST(Controls, ASubjectIsTheEnvironmentsOnlyWhenTheRatioToItsReferenceHeld) {
  Controls controls(ControlParameters{});
  record(controls, key("torch"), 3, 2'000'000, 0.10);
  record(controls, key("liger"), 3, 1'000'000, 0.12);
  // log(1.12) - log(1.10) = 1.8%, inside the subject's 5% margin: the reference moved with it.
  const auto with =
      controls.environment_reason(key("liger"), step(key("liger"), 3, 1'000'000, 0.12));
  ASSERT_TRUE(with);
  EXPECT_NE(with->reason.find("its reference torch moved the same way (+10.0%) and the ratio to it "
                              "changed only +1.8%"),
            std::string::npos)
      << with->reason;
  // +30% against +10%: the subject moved 18% more than its reference: its own step.
  record(controls, key("liger", "w3"), 3, 1'000'000, 0.30);
  record(controls, key("torch", "w3"), 3, 2'000'000, 0.10);
  EXPECT_FALSE(controls.environment_reason(key("liger", "w3"),
                                           step(key("liger", "w3"), 3, 1'000'000, 0.30)));
  // A reference that moved the other way never folds a subject.
  record(controls, key("liger", "w4"), 3, 1'000'000, 0.12);
  record(controls, key("torch", "w4"), 3, 2'000'000, -0.10);
  EXPECT_FALSE(controls.environment_reason(key("liger", "w4"),
                                           step(key("liger", "w4"), 3, 1'000'000, 0.12)));
}

// A host shift moves the references of comparable duration together; the long ones may stay.
TEST(Controls, AReferenceThatMovedWithEnoughReferencesOfItsDurationIsAHostShift) {
  Controls controls(ControlParameters{});
  // Eight short references (~100 us); three moved +20% or more with the key, five did not.
  for (int i = 0; i < 8; ++i) {
    record(controls, key("torch", "short" + std::to_string(i)), 3, 100'000 + 1'000 * i,
           i < 3 ? 0.20 : 0.0);
  }
  // Long references (20x longer) do not count either way.
  for (int i = 0; i < 20; ++i)
    record(controls, key("torch", "long" + std::to_string(i)), 3, 2'000'000, 0.0);
  record(controls, key("torch", "me"), 3, 100'000, 0.40);
  const auto why =
      controls.environment_reason(key("torch", "me"), step(key("torch", "me"), 3, 100'000, 0.40));
  ASSERT_TRUE(why);
  EXPECT_NE(why->reason.find("3 of 8 references within 4x of its duration"), std::string::npos)
      << why->reason;
  // A subject is never folded by the host test: its own reference must show the move.
  record(controls, key("liger", "me2"), 3, 100'000, 0.40);
  EXPECT_FALSE(controls.environment_reason(key("liger", "me2"),
                                           step(key("liger", "me2"), 3, 100'000, 0.40)));
  // Two of eight is not a host shift.
  Controls fewer(ControlParameters{});
  for (int i = 0; i < 8; ++i)
    record(fewer, key("torch", "s" + std::to_string(i)), 3, 100'000, i < 2 ? 0.2 : 0.0);
  record(fewer, key("torch", "me"), 3, 100'000, 0.40);
  EXPECT_FALSE(
      fewer.environment_reason(key("torch", "me"), step(key("torch", "me"), 3, 100'000, 0.40)));
}

// The controls read the onset's cycle: a move in another cycle, or a cycle no longer kept, is no
// reason.
TEST(Controls, OnlyTheOnsetsCycleCounts) {
  ControlParameters parameters;
  parameters.kept_cycles = 2;
  Controls controls(parameters);
  record(controls, key("liger"), 3, 1'000'000, 0.30);
  record(controls, key("torch"), 4, 2'000'000, 0.20);  // a week later: another cycle
  EXPECT_FALSE(controls.environment_reason(key("torch"), step(key("torch"), 4, 2'000'000, 0.20)));
  record(controls, key("liger"), 5, 1'000'000, 0.0);
  record(controls, key("torch"), 6, 2'000'000, 0.0);
  // Week 3 is two cycles back: no longer kept.
  EXPECT_FALSE(controls.environment_reason(key("liger"), step(key("liger"), 3, 1'000'000, 0.30)));
}

}  // namespace
}  // namespace kernelwatch::detectors
