#include "daemon/format.hpp"

#include <sstream>

#include <gtest/gtest.h>

namespace kernelwatch::daemon {
namespace {

using std::chrono::nanoseconds;

TEST(FormatTest, DurationsPickAReadableUnit) {
  EXPECT_EQ(format_duration(nanoseconds{812}), "812 ns");
  EXPECT_EQ(format_duration(nanoseconds{577632}), "577.6 us");
  EXPECT_EQ(format_duration(nanoseconds{23379841}), "23.38 ms");
  EXPECT_EQ(format_duration(nanoseconds{2'500'000'000}), "2.500 s");
}

TEST(FormatTest, TableColumnsAlign) {
  std::ostringstream out;
  print_table(out, {"A", "LONGER"}, {{"xyz", "1"}, {"w", "22"}});
  EXPECT_EQ(out.str(), "A    LONGER\nxyz  1\nw    22\n");
}

}  // namespace
}  // namespace kernelwatch::daemon
