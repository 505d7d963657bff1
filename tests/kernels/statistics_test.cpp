#include "kernels/harness/statistics.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::kernels {
namespace {

struct QuantileCase {
  std::vector<double> sorted;
  double q;
  double expected;  // worked by hand: position q*(n-1), linear between neighbours
};

TEST(Statistics, QuantileMatchesHandComputedTable) {
  const QuantileCase cases[] = {
      {{7}, 0.0, 7},
      {{7}, 0.5, 7},
      {{7}, 1.0, 7},
      {{10, 20}, 0.2, 12},          // pos 0.2
      {{10, 20}, 0.5, 15},          // pos 0.5
      {{10, 20}, 0.8, 18},          // pos 0.8
      {{1, 2, 3, 4}, 0.5, 2.5},     // pos 1.5
      {{1, 2, 3, 4}, 0.2, 1.6},     // pos 0.6
      {{1, 2, 3, 4}, 0.8, 3.4},     // pos 2.4
      {{1, 2, 3, 4, 5}, 0.5, 3},    // pos 2
      {{1, 2, 3, 4, 5}, 0.2, 1.8},  // pos 0.8
      {{1, 2, 3, 4, 5}, 0.8, 4.2},  // pos 3.2
      {{5, 5, 5, 9}, 0.5, 5},       // ties: pos 1.5 between 5 and 5
      {{5, 5, 5, 9}, 0.8, 6.6},     // pos 2.4: 5 + 0.4 * 4
      {{2, 2, 2}, 0.2, 2},
  };
  for (const auto& c : cases) {
    EXPECT_NEAR(quantile_sorted(c.sorted, c.q), c.expected, 1e-12)
        << "n=" << c.sorted.size() << " q=" << c.q;
  }
}

TEST(Statistics, SummaryRoundsQuantilesAndSortsItsInput) {
  const Summary s = summarize({400.0, 100.0, 300.0, 200.0, 1000.4});
  EXPECT_EQ(s.count, 5u);
  EXPECT_EQ(s.min.count(), 100);
  EXPECT_EQ(s.max.count(), 1000);  // 1000.4 rounds to nearest
  EXPECT_EQ(s.median.count(), 300);
  EXPECT_EQ(s.p20.count(), 180);  // pos 0.8 between 100 and 200
  EXPECT_EQ(s.p80.count(), 520);  // pos 3.2: 400 + 0.2 * 600.4 = 520.08
  EXPECT_NEAR(s.mean_ns, 400.08, 1e-9);
}

}  // namespace
}  // namespace kernelwatch::kernels
