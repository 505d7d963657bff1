#include "detectors/statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kernelwatch::detectors {
namespace {

TEST(Statistics, MedianOddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{}), 0);
}

TEST(Statistics, QuantileInterpolatesLikeNumpy) {
  const std::vector<double> values{10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(quantile(values, 0.0), 10);
  EXPECT_DOUBLE_EQ(quantile(values, 0.2), 18);  // position 0.8 between 10 and 20
  EXPECT_DOUBLE_EQ(quantile(values, 0.5), 30);
  EXPECT_DOUBLE_EQ(quantile(values, 1.0), 50);
}

TEST(Statistics, MedianAbsoluteDeviation) {
  // median 100000; deviations 1000 500 0 500 1000 -> 500
  EXPECT_DOUBLE_EQ(
      median_absolute_deviation(std::vector<double>{99000, 99500, 100000, 100500, 101000}), 500);
  EXPECT_DOUBLE_EQ(median_absolute_deviation(std::vector<double>{5, 5, 5, 9}), 0);
}

TEST(Statistics, MannKendallSignsAndTies) {
  // Strictly increasing, n = 5: S = 10, variance = 5*4*15/18 = 16.667, z = 9 / 4.082 = 2.205.
  const auto up = mann_kendall(std::vector<double>{1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(up.s, 10);
  EXPECT_NEAR(up.z, 2.2045, 1e-4);
  const auto down = mann_kendall(std::vector<double>{5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(down.s, -10);
  EXPECT_NEAR(down.z, -2.2045, 1e-4);
  // All tied: no variance, no trend.
  EXPECT_DOUBLE_EQ(mann_kendall(std::vector<double>{7, 7, 7, 7}).z, 0);
  EXPECT_DOUBLE_EQ(mann_kendall(std::vector<double>{1, 2}).z, 0);
}

TEST(Statistics, TheilSenIgnoresOneOutlier) {
  const auto line = theil_sen(std::vector<double>{10, 12, 14, 100, 18, 20});
  EXPECT_DOUBLE_EQ(line.slope, 2);
  EXPECT_DOUBLE_EQ(line.intercept, 10);
}

// Table values (any statistics table; scipy.stats.t.ppf / norm.ppf agree to the digits given).
TEST(Statistics, StudentTQuantilesMatchTheTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062047, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.6040949, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281389, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.95, 30), 1.6972609, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.025, 10), -2.2281389, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.9995, 2.5), 18.27789, 1e-3);  // fractional df (by quadrature)
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.959966, 1e-5);   // tends to the normal
  EXPECT_DOUBLE_EQ(student_t_quantile(0.5, 7), 0);
  EXPECT_NEAR(student_t_cdf(2, 3), 0.930337, 1e-6);
  EXPECT_NEAR(student_t_cdf(-2, 3), 0.069663, 1e-6);
  // Asked twice (the second from the table), the same answer.
  EXPECT_DOUBLE_EQ(student_t_quantile(0.995, 4), student_t_quantile(0.995, 4));
  EXPECT_TRUE(std::isnan(student_t_quantile(0.9, 0)));
}

TEST(Statistics, NormalQuantilesMatchTheTables) {
  EXPECT_NEAR(normal_quantile(0.975), 1.959963985, 1e-9);
  EXPECT_NEAR(normal_quantile(0.5), 0, 1e-12);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306, 1e-8);
  EXPECT_NEAR(normal_cdf(1), 0.841344746, 1e-9);
  EXPECT_EQ(normal_quantile(0), -38);
  EXPECT_EQ(normal_quantile(1), 38);
}

}  // namespace
}  // namespace kernelwatch::detectors
