// Siblings as controls (issue #27), the decision alone and through the Watch, on a FAKE host of
// eight identical GPUs (placements as the daemon labels runs; no GPU or NVML is involved).
#include "detectors/siblings.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>
#include <string_view>

#include "detectors/watch.hpp"
#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using core::Direction;
using core::Placement;
using namespace std::chrono_literals;

constexpr int kGpus = 8;
constexpr int kKeys = 9;

Placement gpu(const std::string& host, int index) {
  return Placement{host, std::to_string(index), "GPU-" + host + "-" + std::to_string(index),
                   "00000000:1" + std::to_string(index) + ":00.0"};
}

// What the runs view (PlacedRun holds views), kept while the tests run.
std::string_view kept(std::string key) {
  static std::deque<std::string> keys;
  return keys.emplace_back(std::move(key));
}
const Placement* kept(Placement placement) {
  static std::deque<Placement> placements;
  return &placements.emplace_back(std::move(placement));
}

// One cycle of `keys` keys on the GPUs of `hosts`; factor(host, gpu) scales a GPU's medians and
// a scaled GPU's runs moved that way.
using Factor = std::function<double(const std::string&, int)>;
std::vector<PlacedRun> cycle(const std::vector<std::string>& hosts, const Factor& factor,
                             int keys = kKeys) {
  std::vector<PlacedRun> out;
  for (const auto& host : hosts) {
    for (int g = 0; g < kGpus; ++g) {
      for (int k = 0; k < keys; ++k) {
        const double f = factor(host, g);
        PlacedRun run{kept("key-" + std::to_string(k)),
                      kept(gpu(host, g)),
                      1e6 * (k + 1) * f * (1 + 0.001 * (g % 3)),
                      std::nullopt,
                      {}};
        if (f > 1.05) run.moved = Direction::Regression;
        if (f < 0.95) run.moved = Direction::Improvement;
        out.push_back(std::move(run));
      }
    }
  }
  return out;
}

TEST(Siblings, OneGpuTwelvePercentSlowerThanItsSevenSiblingsIsOutOfLine) {
  const auto runs =
      cycle({"h100-a"}, [](const std::string&, int g) { return g == 3 ? 1.12 : 1.0; });
  const auto out = out_of_line(runs, ControlParameters{});
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].placement.gpu, "3");
  EXPECT_FALSE(out[0].host_level);
  EXPECT_EQ(out[0].direction, Direction::Regression);
  EXPECT_NEAR(out[0].relative_change, 0.12, 0.003);
  EXPECT_EQ(out[0].describe(),
            "GPU 3 (UUID GPU-h100-a-3) of host h100-a is 11.9% slower than its 7 siblings on 9 of "
            "9 benchmarks");
  EXPECT_EQ(out[0].unit_id().str(), "gpu:h100-a/GPU-h100-a-3");
  EXPECT_EQ(out[0].keys, (std::vector<std::string>{"key-0", "key-1", "key-2", "key-3", "key-4",
                                                   "key-5", "key-6", "key-7", "key-8"}));
}

TEST(Siblings, AGpuOutOfLineNamesTheKeysItIsOutOfLineOnOnly) {
  auto runs = cycle({"h100-a"}, [](const std::string&, int) { return 1.0; });
  for (auto& run : runs) {  // GPU 5 slower on keys 0..5 of 9: most of its keys
    if (run.placement->gpu == "5" && run.key < "key-6") {
      run.median *= 1.12;
      run.moved = Direction::Regression;
    }
  }
  const auto out = out_of_line(runs, ControlParameters{});
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].keys_out, 6U);
  EXPECT_EQ(out[0].keys,
            (std::vector<std::string>{"key-0", "key-1", "key-2", "key-3", "key-4", "key-5"}));
}

TEST(Siblings, AllEightGpusSlowerAreNoGpusStory) {
  const auto runs = cycle({"h100-a"}, [](const std::string&, int) { return 1.12; });
  EXPECT_TRUE(out_of_line(runs, ControlParameters{}).empty());
}

TEST(Siblings, AGpuOutOfLineOnAFewKeysOnlyIsNotAGpuAlert) {
  auto runs = cycle({"h100-a"}, [](const std::string&, int) { return 1.0; });
  for (auto& run : runs) {  // GPU 5 slower on keys 0..3 of 9: not most of its keys
    if (run.placement->gpu == "5" && run.key < "key-4") {
      run.median *= 1.12;
      run.moved = Direction::Regression;
    }
  }
  EXPECT_TRUE(out_of_line(runs, ControlParameters{}).empty());
}

TEST(Siblings, AGpuFasterThanItsSiblingsIsOutOfLineTheOtherWay) {
  const auto runs =
      cycle({"h100-a"}, [](const std::string&, int g) { return g == 0 ? 0.85 : 1.0; });
  const auto out = out_of_line(runs, ControlParameters{});
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].direction, Direction::Improvement);
  EXPECT_NE(out[0].describe().find("faster than its 7 siblings"), std::string::npos);
}

TEST(Siblings, OneHostOfFourOutOfLineIsAHostAlertNotEightGpuAlerts) {
  const auto runs =
      cycle({"h100-a", "h100-b", "h100-c", "h100-d"},
            [](const std::string& host, int) { return host == "h100-c" ? 1.12 : 1.0; });
  const auto out = out_of_line(runs, ControlParameters{});
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(out[0].host_level);
  EXPECT_EQ(out[0].describe(),
            "host h100-c is 12.0% slower than its 3 sibling hosts on 9 of 9 benchmarks");
}

TEST(Siblings, BackInLineNeedsTheUnitComparedOnEnoughKeys) {
  const auto in_line = cycle({"h100-a"}, [](const std::string&, int) { return 1.0; });
  EXPECT_TRUE(back_in_line(in_line, "gpu:h100-a/GPU-h100-a-3", ControlParameters{}));
  const auto still =
      cycle({"h100-a"}, [](const std::string&, int g) { return g == 3 ? 1.12 : 1.0; });
  EXPECT_FALSE(back_in_line(still, "gpu:h100-a/GPU-h100-a-3", ControlParameters{}));
  EXPECT_FALSE(back_in_line(in_line, "gpu:h100-z/GPU-h100-z-3", ControlParameters{}));
}

// The unit seen first in the runs (GPU 0, the first host) is judged like any other: a reference
// into a freed tally once read the allocator's bookkeeping there and said it was back in line
// while it was 30% slower, so its alert resolved and fired again every cycle.
// Labels are the clients' (a POST, an import): hosts and GPU indices with '/' make two placements
// one unit id ("gpu:a/b/c"), so there are more host groups than units. Each group's count is still
// in bounds (the tally once sized them by the units: a heap write past its end).
TEST(Siblings, PlacementsWhoseUnitIdsCoincideAreCountedInBounds) {
  const std::vector<Placement> placements = {{"a", "b/c", "", ""},
                                             {"a/b", "c", "", ""},
                                             {"p", "q/r", "", ""},
                                             {"p/q", "r", "", ""},
                                             {"z", "0", "", ""}};
  std::vector<PlacedRun> runs;
  for (int k = 0; k < kKeys; ++k) {
    for (std::size_t i = 0; i < placements.size(); ++i) {
      runs.push_back({kept("key-" + std::to_string(k)),
                      kept(placements[i]),
                      1e6 * (k + 1) * (i == 4 ? 1.3 : 1.0),
                      std::nullopt,
                      {}});
    }
  }
  // What it checks is the memory access: it fails under -fsanitize=address (heap-buffer-overflow
  // before the fix), not in a plain build. Each host here has one GPU, so no GPU has a sibling.
  for (const auto& unit : out_of_line(runs, ControlParameters{})) EXPECT_TRUE(unit.host_level);
  // Since core::UnitId escapes '/', those placements are five units, not three.
  std::set<std::string> ids;
  for (const auto& p : placements) {
    OutOfLine unit;
    unit.placement = p;
    ids.insert(unit.unit_id().str());
  }
  EXPECT_EQ(ids.size(), placements.size());
}

TEST(Siblings, TheUnitSeenFirstIsNotBackInLineWhileItIsStillOutOfLine) {
  const auto gpu0 = cycle({"h100-a"}, [](const std::string&, int g) { return g == 0 ? 1.3 : 1.0; });
  ASSERT_EQ(out_of_line(gpu0, ControlParameters{}).size(), 1U);
  EXPECT_FALSE(back_in_line(gpu0, "gpu:h100-a/GPU-h100-a-0", ControlParameters{}));
  const auto host0 =
      cycle({"h100-a", "h100-b", "h100-c", "h100-d"},
            [](const std::string& host, int) { return host == "h100-a" ? 1.3 : 1.0; });
  ASSERT_EQ(out_of_line(host0, ControlParameters{}).size(), 1U);
  EXPECT_FALSE(back_in_line(host0, "host:h100-a", ControlParameters{}));
}

// Through the Watch, as the daemon feeds it: cycle c of every key on every GPU, GPU after GPU
// (1 ms apart, as runners/gpus.hpp observes them), closed at its end.
struct Fed {
  std::vector<AlertEvent> events;
};

Fed feed_cycle(Watch& watch, int c, const std::function<double(int)>& factor) {
  Fed out;
  const auto start = testing::week(c);
  for (int g = 0; g < kGpus; ++g) {
    for (int k = 0; k < kKeys; ++k) {
      KeyLabels key{"fake/BM_K" + std::to_string(k), "fakegpu",  "arg0_1024",
                    "nvidia-h100-80gb-hbm3",         "protocol", "digest-" + std::to_string(k)};
      Observation run = testing::run_at(c, static_cast<std::int64_t>(1e6 * (k + 1) * factor(g)));
      run.external_id = "c" + std::to_string(c) + "-g" + std::to_string(g);
      run.observed_at = start + std::chrono::milliseconds(g) + std::chrono::microseconds(k);
      run.placement = gpu("h100-a", g);
      auto step = watch.observe(key, run, ConfirmPolicy::Next);
      out.events.insert(out.events.end(), step.events.begin(), step.events.end());
    }
  }
  auto closed = watch.close_cycle();
  out.events.insert(out.events.end(), closed.begin(), closed.end());
  return out;
}

std::map<std::string, int> fired_kinds(const std::vector<AlertEvent>& events) {
  std::map<std::string, int> out;
  for (const auto& e : events) {
    if (!e.fired || core::is_incident_member(e.alert)) continue;
    ++out[std::string(core::to_string(e.alert.kind)) + (e.alert.members.empty() ? "" : "+members")];
  }
  return out;
}

TEST(SiblingsWatch, OneSlowGpuOfEightIsOneGpuAlertAndNoKeyAlertThenResolves) {
  Watch watch(DetectorParameters{});
  for (int c = 0; c < 3; ++c) {
    EXPECT_TRUE(fired_kinds(feed_cycle(watch, c, [](int) { return 1.0; }).events).empty());
  }
  const auto slow = feed_cycle(watch, 3, [](int g) { return g == 3 ? 1.12 : 1.0; });
  EXPECT_EQ(fired_kinds(slow.events), (std::map<std::string, int>{{"environment", 1}}));
  for (const auto& e : slow.events) {
    if (!e.fired) continue;
    EXPECT_NE(e.alert.explanation.find("GPU 3 (UUID GPU-h100-a-3) of host h100-a is 12.0% slower "
                                       "than its 7 siblings on 9 of 9 benchmarks"),
              std::string::npos)
        << e.alert.explanation;
    // The keys it was out of line on, by their labels (what `backtest`'s filters select by).
    ASSERT_EQ(e.alert.keys.size(), static_cast<std::size_t>(kKeys));
    EXPECT_EQ(e.alert.keys[0].benchmark, "fake/BM_K0");
    EXPECT_EQ(e.alert.keys[8].digest, "digest-8");
  }
  // Still slow: nothing new. Back in line: the one alert resolves.
  EXPECT_TRUE(
      fired_kinds(feed_cycle(watch, 4, [](int g) { return g == 3 ? 1.12 : 1.0; }).events).empty());
  const auto back = feed_cycle(watch, 5, [](int) { return 1.0; });
  std::size_t resolved = 0;
  for (const auto& e : back.events) resolved += e.alert.state == core::AlertState::Resolved;
  EXPECT_EQ(resolved, 1U);
  EXPECT_TRUE(fired_kinds(back.events).empty());
}

TEST(SiblingsWatch, AllEightGpusSlowerAreTheUsualIncidentAndNoGpuAlert) {
  Watch watch(DetectorParameters{});
  for (int c = 0; c < 3; ++c) (void)feed_cycle(watch, c, [](int) { return 1.0; });
  const auto slow = feed_cycle(watch, 3, [](int) { return 1.12; });
  EXPECT_EQ(fired_kinds(slow.events), (std::map<std::string, int>{{"environment+members", 1}}));
}

// GPUs 3 and 4 come one after the other in a key's series of a cycle: GPU 4's breach would
// confirm GPU 3's as a step of the key. The step waits for the cycle's other runs of the key;
// GPU 5's, back in the old band, drops it: two GPU alerts, no key alert, in every cycle.
TEST(SiblingsWatch, TwoSlowGpusNextToEachOtherAreTwoGpuAlertsAndNoKeyStep) {
  Watch watch(DetectorParameters{});
  for (int c = 0; c < 3; ++c) (void)feed_cycle(watch, c, [](int) { return 1.0; });
  const auto slow_gpus = [](int g) { return g == 3 || g == 4 ? 1.12 : 1.0; };
  const auto slow = feed_cycle(watch, 3, slow_gpus);
  EXPECT_EQ(fired_kinds(slow.events), (std::map<std::string, int>{{"environment", 2}}));
  std::set<std::string> gpus;
  for (const auto& e : slow.events) {
    if (e.fired) gpus.insert(e.alert.placement.gpu);
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"3", "4"}));
  EXPECT_TRUE(fired_kinds(feed_cycle(watch, 4, slow_gpus).events).empty());
  for (const auto* view : watch.keys()) EXPECT_FALSE(view->monitor->open_alert());
}

// GPUs 3 and 5 (one in band between): GPU 5's breach would confirm GPU 3's two runs later.
TEST(SiblingsWatch, TwoSlowGpusWithOneBetweenAreTwoGpuAlertsAndNoKeyStep) {
  Watch watch(DetectorParameters{});
  for (int c = 0; c < 3; ++c) (void)feed_cycle(watch, c, [](int) { return 1.0; });
  const auto slow = feed_cycle(watch, 3, [](int g) { return g == 3 || g == 5 ? 1.12 : 1.0; });
  EXPECT_EQ(fired_kinds(slow.events), (std::map<std::string, int>{{"environment", 2}}));
}

// A step of the code from GPU 3 on (GPUs 3..7 slower, the runs of the cycle after it too) is
// still the key's: the deferred step holds to the cycle's end and fires.
TEST(SiblingsWatch, AStepFromTheMiddleOfACycleOnIsStillDecidedAtItsClose) {
  Watch watch(DetectorParameters{});
  for (int c = 0; c < 3; ++c) (void)feed_cycle(watch, c, [](int) { return 1.0; });
  const auto slow = feed_cycle(watch, 3, [](int g) { return g >= 3 ? 1.12 : 1.0; });
  const auto kinds = fired_kinds(slow.events);
  EXPECT_EQ(kinds.count("environment"), 0U);
  EXPECT_EQ(kinds.count("environment+members") + kinds.count("step"), 1U);
}

TEST(SiblingsWatch, AGpuAlertCanBeAcknowledgedAndStaysOpenUntilTheGpuIsBackInLine) {
  Watch watch(DetectorParameters{});
  for (int c = 0; c < 3; ++c) (void)feed_cycle(watch, c, [](int) { return 1.0; });
  const auto slow_gpu = [](int g) { return g == 3 ? 1.12 : 1.0; };
  const auto slow = feed_cycle(watch, 3, slow_gpu);
  core::AlertId id;
  for (const auto& e : slow.events) {
    if (e.fired) id = e.alert.id;
  }
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(watch
                  .act_on_unit(core::AlertId("no-such-alert"), OperatorAction::Acknowledge,
                               testing::week(4))
                  .empty());
  const auto acked = watch.act_on_unit(id, OperatorAction::Acknowledge, testing::week(4));
  ASSERT_EQ(acked.size(), 1U);
  EXPECT_EQ(acked[0].alert.state, core::AlertState::Acknowledged);
  EXPECT_EQ(acked[0].from, core::AlertState::Firing);
  EXPECT_TRUE(watch.act_on_unit(id, OperatorAction::Acknowledge, testing::week(4)).empty());
  EXPECT_TRUE(fired_kinds(feed_cycle(watch, 4, slow_gpu).events).empty());
  const auto back = feed_cycle(watch, 5, [](int) { return 1.0; });
  ASSERT_EQ(back.events.size(), 1U);
  EXPECT_EQ(back.events[0].alert.state, core::AlertState::Resolved);
  EXPECT_EQ(back.events[0].from, core::AlertState::Acknowledged);
}

// Rebaselined: the GPU's level is accepted; no new alert while it stays out of line, a new one
// when it is out of line again after being back in line.
TEST(SiblingsWatch, ARebaselinedGpuAlertIsNotRaisedAgainUntilTheGpuWasBackInLine) {
  Watch watch(DetectorParameters{});
  for (int c = 0; c < 3; ++c) (void)feed_cycle(watch, c, [](int) { return 1.0; });
  const auto slow_gpu = [](int g) { return g == 3 ? 1.12 : 1.0; };
  core::AlertId id;
  for (const auto& e : feed_cycle(watch, 3, slow_gpu).events) {
    if (e.fired) id = e.alert.id;
  }
  const auto closed = watch.act_on_unit(id, OperatorAction::Rebaseline, testing::week(4));
  ASSERT_EQ(closed.size(), 1U);
  EXPECT_EQ(closed[0].alert.state, core::AlertState::Rebaselined);
  EXPECT_TRUE(feed_cycle(watch, 4, slow_gpu).events.empty());
  EXPECT_TRUE(feed_cycle(watch, 5, [](int) { return 1.0; }).events.empty());
  EXPECT_EQ(fired_kinds(feed_cycle(watch, 6, slow_gpu).events),
            (std::map<std::string, int>{{"environment", 1}}));
}

}  // namespace
}  // namespace kernelwatch::detectors
