#include "detectors/attribution.hpp"

#include <gtest/gtest.h>

#include "detectors_test_support.hpp"

namespace kernelwatch::detectors {
namespace {

using testing::run_at;

TEST(Attribution, PicksTheFieldThatChanged) {
  struct Case {
    const char* name;
    void (*change)(Observation&);
    std::vector<AttributionChange> expected;
  };
  const std::vector<Case> cases = {
      {"nothing", [](Observation&) {}, {}},
      {"version",
       [](Observation& r) { r.implementation_version = "0.6.2"; },
       {{"implementation.version", "0.6.1", "0.6.2"}}},
      {"digest",
       [](Observation& r) { r.implementation_digest = "sha256:bbb"; },
       {{"implementation.digest", "sha256:aaa", "sha256:bbb"}}},
      {"driver",
       [](Observation& r) { r.software["driver"] = "560.28"; },
       {{"software.driver", "550.54", "560.28"}}},
      {"field added",
       [](Observation& r) { r.software["clocks.sm"] = "1980"; },
       {{"software.clocks.sm", "", "1980"}}},
      {"field removed",
       [](Observation& r) { r.software.erase("cuda"); },
       {{"software.cuda", "12.4", ""}}},
      {"version and driver",
       [](Observation& r) {
         r.implementation_version = "0.7.0";
         r.software["driver"] = "560.28";
       },
       {{"implementation.version", "0.6.1", "0.7.0"}, {"software.driver", "550.54", "560.28"}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto before = run_at(0, 1000);
    before.implementation_version = "0.6.1";
    before.implementation_digest = "sha256:aaa";
    before.software = {{"driver", "550.54"}, {"cuda", "12.4"}};
    auto after = before;
    c.change(after);
    EXPECT_EQ(attribute(before, after), c.expected);
  }
}

// The host a run ran on is attributed when both runs name one: a new host's first runs judged
// by its fleet's (storage.warm_start) say where they ran; history that names no host says
// nothing of it.
TEST(Attribution, AnotherHostIsAChangeOnlyWhenBothRunsNameTheirs) {
  const auto on = [](const std::string& host) {
    auto run = run_at(0, 1000);
    if (!host.empty()) run.placement = core::Placement{host, "0", "", ""};
    return run;
  };
  EXPECT_EQ(attribute(on("h100-a"), on("h100-d")),
            (std::vector<AttributionChange>{{"host", "h100-a", "h100-d"}}));
  EXPECT_TRUE(attribute(on("h100-a"), on("h100-a")).empty());
  EXPECT_TRUE(attribute(on(""), on("h100-d")).empty());
  EXPECT_TRUE(attribute(on("h100-a"), on("")).empty());
  EXPECT_EQ(describe(attribute(on("h100-a"), on("h100-d"))), "host changed h100-a -> h100-d");
}

TEST(Attribution, DescribesChangesForPeople) {
  EXPECT_EQ(describe({}), "no recorded implementation or software change");
  EXPECT_EQ(
      describe({{"implementation.version", "0.6.0", "0.6.1"}, {"software.driver", "", "560"}}),
      "implementation version changed 0.6.0 -> 0.6.1; software driver changed (unrecorded) -> 560");
}

}  // namespace
}  // namespace kernelwatch::detectors
