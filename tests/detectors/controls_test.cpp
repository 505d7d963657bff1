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

// What the controls decide of this one step alone (no other step held, no incident before).
std::optional<EnvironmentReason> reason_for(const Controls& controls, const KeyLabels& k,
                                            const Trigger& trigger) {
  const HeldStep held{&k, &trigger};
  const auto decisions =
      controls.decide(std::span<const HeldStep>(&held, 1), [](const core::AlertId&) { return 0; });
  return decisions.front().incident;
}

// Steps of many keys held in one close, decided together.
std::vector<StepDecision> decide_all(const Controls& controls, const std::vector<KeyLabels>& keys,
                                     const std::vector<Trigger>& triggers,
                                     std::size_t members_before = 0) {
  std::vector<HeldStep> held;
  for (std::size_t i = 0; i < keys.size(); ++i) held.push_back({&keys[i], &triggers[i]});
  return controls.decide(held, [&](const core::AlertId&) { return members_before; });
}

TEST(Controls, AReferenceWhoseSubjectMovedTheSameWayIsTheEnvironments) {
  Controls controls(ControlParameters{});
  record(controls, key("liger"), 3, 1'000'000, 0.30, 5min);
  record(controls, key("torch"), 3, 2'000'000, 0.20, 9min);
  const auto why = reason_for(controls, key("torch"), step(key("torch"), 3, 2'000'000, 0.20, 9min));
  ASSERT_TRUE(why);
  EXPECT_NE(why->reason.find("its subject liger moved the same way (+30.0%)"), std::string::npos)
      << why->reason;
  EXPECT_EQ(why->incident.long_form(), "nvidia-h100@" + core::format_timestamp(week(3) + 5min));
  // Another workload's subject is no counterpart.
  Controls other(ControlParameters{});
  record(other, key("liger", "w2"), 3, 1'000'000, 0.30);
  record(other, key("torch"), 3, 2'000'000, 0.20);
  EXPECT_FALSE(reason_for(other, key("torch"), step(key("torch"), 3, 2'000'000, 0.20)));
}

TEST(Controls, ASubjectIsTheEnvironmentsOnlyWhenTheRatioToItsReferenceHeld) {
  Controls controls(ControlParameters{});
  record(controls, key("torch"), 3, 2'000'000, 0.10);
  record(controls, key("liger"), 3, 1'000'000, 0.12);
  // log(1.12) - log(1.10) = 1.8%, inside the subject's 5% margin: the reference moved with it.
  const auto with = reason_for(controls, key("liger"), step(key("liger"), 3, 1'000'000, 0.12));
  ASSERT_TRUE(with);
  EXPECT_NE(with->reason.find("its reference torch moved the same way (+10.0%) and the ratio to it "
                              "changed only +1.8%"),
            std::string::npos)
      << with->reason;
  // +30% against +10%: the subject moved 18% more than its reference: its own step.
  record(controls, key("liger", "w3"), 3, 1'000'000, 0.30);
  record(controls, key("torch", "w3"), 3, 2'000'000, 0.10);
  EXPECT_FALSE(
      reason_for(controls, key("liger", "w3"), step(key("liger", "w3"), 3, 1'000'000, 0.30)));
  // A reference that moved the other way never folds a subject.
  record(controls, key("liger", "w4"), 3, 1'000'000, 0.12);
  record(controls, key("torch", "w4"), 3, 2'000'000, -0.10);
  EXPECT_FALSE(
      reason_for(controls, key("liger", "w4"), step(key("liger", "w4"), 3, 1'000'000, 0.12)));
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
      reason_for(controls, key("torch", "me"), step(key("torch", "me"), 3, 100'000, 0.40));
  ASSERT_TRUE(why);
  EXPECT_NE(why->reason.find("3 of 8 references within 4x of its duration"), std::string::npos)
      << why->reason;
  // A subject is never folded by the host test: its own reference must show the move.
  record(controls, key("liger", "me2"), 3, 100'000, 0.40);
  EXPECT_FALSE(
      reason_for(controls, key("liger", "me2"), step(key("liger", "me2"), 3, 100'000, 0.40)));
  // Two of eight is not a host shift.
  Controls fewer(ControlParameters{});
  for (int i = 0; i < 8; ++i)
    record(fewer, key("torch", "s" + std::to_string(i)), 3, 100'000, i < 2 ? 0.2 : 0.0);
  record(fewer, key("torch", "me"), 3, 100'000, 0.40);
  EXPECT_FALSE(reason_for(fewer, key("torch", "me"), step(key("torch", "me"), 3, 100'000, 0.40)));
}

// The controls read the onset's cycle: a move in another cycle, or a cycle no longer kept, is no
// reason.
TEST(Controls, OnlyTheOnsetsCycleCounts) {
  ControlParameters parameters;
  parameters.kept_cycles = 2;
  Controls controls(parameters);
  record(controls, key("liger"), 3, 1'000'000, 0.30);
  record(controls, key("torch"), 4, 2'000'000, 0.20);  // a week later: another cycle
  EXPECT_FALSE(reason_for(controls, key("torch"), step(key("torch"), 4, 2'000'000, 0.20)));
  record(controls, key("liger"), 5, 1'000'000, 0.0);
  record(controls, key("torch"), 6, 2'000'000, 0.0);
  // Week 3 is two cycles back: no longer kept.
  EXPECT_FALSE(reason_for(controls, key("liger"), step(key("liger"), 3, 1'000'000, 0.30)));
}

// Many keys of one environment stepping in one cycle are one incident, whatever their providers:
// subjects whose references did not move, across kernels (a dependency they share), included.
TEST(Controls, ManyKeysSteppingInOneCycleAreOneIncidentWhateverTheirProviders) {
  Controls controls(ControlParameters{});
  std::vector<KeyLabels> keys;
  std::vector<Trigger> steps;
  for (int i = 0; i < 6; ++i) {
    const auto k = key("liger", "w" + std::to_string(i), i % 2 ? "softmax/forward" : "geglu/full");
    const double change = 0.5 + 0.5 * i;  // +50% .. +300%, each beyond its flat reference
    record(controls, k, 3, 1'000'000, change, std::chrono::minutes(i));
    record(controls, key("torch", "w" + std::to_string(i), k.benchmark), 3, 2'000'000, 0.01,
           std::chrono::minutes(i));
    keys.push_back(k);
    steps.push_back(step(k, 3, 1'000'000, change, std::chrono::minutes(i)));
  }
  const auto decisions = decide_all(controls, keys, steps);
  for (const auto& d : decisions) {
    ASSERT_TRUE(d.incident);
    EXPECT_EQ(d.incident->incident.long_form(), "nvidia-h100@" + core::format_timestamp(week(3)));
    EXPECT_NE(d.incident->reason.find("one of 6 keys of nvidia-h100 that stepped in this cycle"),
              std::string::npos)
        << d.incident->reason;
  }
  // Three are not many: each is its own alert (no reference moved with it).
  const std::vector<KeyLabels> three(keys.begin(), keys.begin() + 3);
  const std::vector<Trigger> three_steps(steps.begin(), steps.begin() + 3);
  for (const auto& d : decide_all(controls, three, three_steps)) EXPECT_FALSE(d.incident);
  // ... unless the incident of their cycle already has members (a step confirmed a cycle late).
  for (const auto& d : decide_all(controls, three, three_steps, 2)) EXPECT_TRUE(d.incident);
}

// The issue's picture: 60 keys of a host slow down 8% (subjects with their references) while two
// subjects slow down 30% against references that moved 8%: those two moves are their own.
TEST(Controls, ASubjectWellBeyondItsReferenceIsItsOwnWhereTheOthersMovedWithTheirs) {
  Controls controls(ControlParameters{});
  std::vector<KeyLabels> keys;
  std::vector<Trigger> steps;
  const auto add = [&](const std::string& provider, const std::string& workload, double change) {
    const auto k = key(provider, workload);
    record(controls, k, 3, provider == "torch" ? 2'000'000 : 1'000'000, change);
    keys.push_back(k);
    steps.push_back(step(k, 3, provider == "torch" ? 2'000'000 : 1'000'000, change));
  };
  for (int i = 0; i < 30; ++i) {
    add("liger", "w" + std::to_string(i), 0.08);
    add("torch", "w" + std::to_string(i), 0.08);
  }
  add("liger", "own-a", 0.30);
  add("torch", "own-a", 0.08);
  add("liger", "own-b", 0.30);
  add("torch", "own-b", 0.08);
  const auto decisions = decide_all(controls, keys, steps);
  std::size_t members = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool own = keys[i].workload.rfind("own-", 0) == 0 && keys[i].provider == "liger";
    EXPECT_EQ(!decisions[i].incident, own) << keys[i].display();
    members += decisions[i].incident ? 1 : 0;
    if (own) {
      EXPECT_NE(decisions[i].own_reason.find("its own move: +30.0% against its reference torch "
                                             "+8.0%"),
                std::string::npos)
          << decisions[i].own_reason;
    }
  }
  EXPECT_EQ(members, 62u);
}

// -98.4% against its reference's -98.0% is a change of the benchmark both share, not the
// subject's own move, however far the ratio moved in log scale.
TEST(Controls, AMoveMostlySharedWithItsReferenceIsNeverItsOwn) {
  Controls controls(ControlParameters{});
  std::vector<KeyLabels> keys;
  std::vector<Trigger> steps;
  for (int i = 0; i < 4; ++i) {
    const auto subject = key("liger", "w" + std::to_string(i));
    const auto reference = key("huggingface", "w" + std::to_string(i));
    record(controls, subject, 3, 1'000'000, i == 0 ? -0.984 : -0.02 - 0.05 * i);
    record(controls, reference, 3, 2'000'000, i == 0 ? -0.980 : -0.02 - 0.05 * i);
    keys.push_back(subject);
    steps.push_back(step(subject, 3, 1'000'000, i == 0 ? -0.984 : -0.02 - 0.05 * i));
    keys.push_back(reference);
    steps.push_back(step(reference, 3, 2'000'000, i == 0 ? -0.980 : -0.02 - 0.05 * i));
  }
  for (const auto& d : decide_all(controls, keys, steps)) EXPECT_TRUE(d.incident);
}

}  // namespace
}  // namespace kernelwatch::detectors
