// core::UnitId: the one escaped form that names a host or a GPU of it (issue #38 item 3).
#include "core/placement.hpp"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

TEST(UnitId, AGpuIsNamedByItsHostAndItsUuidElseItsIndex) {
  EXPECT_EQ(UnitId::of(Placement{"h100-a", "3", "GPU-8c3a", "00000000:19:00.0"}).str(),
            "gpu:h100-a/GPU-8c3a");
  EXPECT_EQ(UnitId::of(Placement{"h100-a", "3", "", ""}).str(), "gpu:h100-a/3");
  // A run on a CPU names its host; host_of() names the host of a GPU.
  EXPECT_EQ(UnitId::of(Placement{"h100-a", "", "", ""}).str(), "host:h100-a");
  EXPECT_EQ(UnitId::host_of(Placement{"h100-a", "3", "GPU-8c3a", ""}).str(), "host:h100-a");
  EXPECT_TRUE(UnitId().empty());
  EXPECT_FALSE(UnitId::of(Placement{}).empty());
}

TEST(UnitId, NoTwoUnitsShareAForm) {
  const std::vector<Placement> units = {
      {"a", "b/c", "", ""},  {"a/b", "c", "", ""}, {"a", "b%2Fc", "", ""}, {"a%2Fb", "c", "", ""},
      {"a", "", "", ""},     {"a", "b", "", ""},   {"a/", "", "", ""},     {"a", "/", "", ""},
      {"", "a", "", ""},     {"", "", "", ""},     {"gpu:a", "", "", ""},  {"a", "", "b", ""},
      {"a%", "b", "", ""},   {"a", "%b", "", ""},  {"a", "", "GPU-1", ""}, {"a", "GPU-1", "", ""},
      {"host:a", "", "", ""}};
  std::set<std::string> forms;
  for (const auto& p : units) forms.insert(UnitId::of(p).str());
  // {"a", "", "b"} and {"a", "b", ""} are one GPU (the UUID names it when known), as are
  // {"a", "", "GPU-1"} and {"a", "GPU-1", ""}: every other placement has its own form.
  EXPECT_EQ(forms.size(), units.size() - 2);
  EXPECT_EQ(UnitId::of({"a", "b/c", "", ""}).str(), "gpu:a/b%2Fc");
  EXPECT_EQ(UnitId::of({"a/b", "c", "", ""}).str(), "gpu:a%2Fb/c");
  EXPECT_EQ(UnitId::of({"a%2Fb", "c", "", ""}).str(), "gpu:a%252Fb/c");
}

TEST(UnitId, WriteReplacesWhatTheBufferHeld) {
  std::string buffer = "something long from the run before";
  UnitId::write(buffer, Placement{"h", "0", "", ""});
  EXPECT_EQ(buffer, "gpu:h/0");
  EXPECT_EQ(buffer, UnitId::of(Placement{"h", "0", "", ""}).str());
  EXPECT_LT(UnitId::of(Placement{"a", "0", "", ""}), UnitId::of(Placement{"b", "0", "", ""}));
}

}  // namespace
}  // namespace kernelwatch::core
