// The oracle itself is checked against hand values and, for the backward passes, against
// central finite differences of its own forward pass, so a wrong formula cannot hide in it.
#include "kernels/harness/oracle.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace kernelwatch::kernels::oracle {
namespace {

std::vector<double> random_vector(std::size_t size, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(size);
  for (double& x : v) x = dist(rng);
  return v;
}

TEST(Oracle, LayerNormForwardByHand) {
  const auto out = layer_norm_forward({1, 2, 3, 4}, {1, 1, 1, 1}, {0, 0, 0, 0}, 1, 4, 0.0);
  EXPECT_DOUBLE_EQ(out.mean[0], 2.5);
  EXPECT_DOUBLE_EQ(out.rstd[0], 1.0 / std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(out.y[0], -1.5 / std::sqrt(1.25));
}

// loss = sum(y * dy): its gradient with respect to x, w and b is the LayerNorm backward.
TEST(Oracle, LayerNormBackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(3);
  const std::int64_t rows = 3;
  const std::int64_t n = 5;
  const double eps = 1e-3;
  auto x = random_vector(rows * n, rng, -2, 3);
  auto w = random_vector(n, rng, 0.5, 1.5);
  auto b = random_vector(n, rng, -0.5, 0.5);
  const auto dy = random_vector(rows * n, rng, -1, 1);
  const auto objective = [&](const std::vector<double>& xs, const std::vector<double>& ws,
                             const std::vector<double>& bs) {
    const auto y = layer_norm_forward(xs, ws, bs, rows, n, eps).y;
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += y[i] * dy[i];
    return sum;
  };
  const auto grads = layer_norm_backward(x, w, dy, rows, n, eps);
  const double h = 1e-6;
  const auto central = [&](std::vector<double>& v, std::size_t i) {
    const double saved = v[i];
    v[i] = saved + h;
    const double up = objective(x, w, b);
    v[i] = saved - h;
    const double down = objective(x, w, b);
    v[i] = saved;
    return (up - down) / (2 * h);
  };
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(grads.dx[i], central(x, i), 1e-6) << i;
  for (std::size_t i = 0; i < w.size(); ++i) {
    EXPECT_NEAR(grads.dweight[i], central(w, i), 1e-6) << i;
    EXPECT_NEAR(grads.dbias[i], central(b, i), 1e-6) << i;
  }
}

TEST(Oracle, TvdForwardByHand) {
  const std::vector<double> p = {0.5, 0.25, 0.25, 0.1, 0.2, 0.7};
  const std::vector<double> q = {0.25, 0.25, 0.5, 0.3, 0.2, 0.5};
  auto out = tvd_forward(p, q, {}, 2, 3, Reduction::BatchMean, -100);
  EXPECT_NEAR(out.loss[0], 0.225, 1e-15);
  EXPECT_DOUBLE_EQ(out.grad[0], 0.25);
  EXPECT_DOUBLE_EQ(out.grad[1], 0.0);
  EXPECT_DOUBLE_EQ(out.grad[2], -0.25);
  out = tvd_forward(p, q, {3, -100}, 2, 3, Reduction::Sum, -100);
  EXPECT_NEAR(out.loss[0], 0.25, 1e-15);
  EXPECT_DOUBLE_EQ(out.grad[3], 0.0);
  out = tvd_forward(p, q, {3, -100}, 2, 3, Reduction::Mean, -100);
  EXPECT_NEAR(out.loss[0], 0.25 / 3, 1e-15);
  EXPECT_DOUBLE_EQ(out.grad[0], 0.5 / 3);
  out = tvd_forward(p, q, {-100, -100}, 2, 3, Reduction::BatchMean, -100);
  EXPECT_EQ(out.loss[0], 0.0);
  out = tvd_forward(p, q, {}, 2, 3, Reduction::None, -100);
  ASSERT_EQ(out.loss.size(), 6u);
  EXPECT_DOUBLE_EQ(out.loss[2], 0.125);
  EXPECT_EQ(tvd_backward({0.25, -0.5}, {2.0}), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(tvd_backward({0.25, -0.5}, {2.0, 3.0}), (std::vector<double>{0.5, -1.5}));
}

// Away from p == q the loss is differentiable; its gradient must be the oracle's grad.
TEST(Oracle, TvdGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(5);
  const auto p = random_vector(12, rng, 0, 1);
  const auto q = random_vector(12, rng, 0, 1);
  const std::vector<std::int64_t> labels = {1, -100, 2};
  for (Reduction reduction : {Reduction::BatchMean, Reduction::Sum, Reduction::Mean}) {
    const auto out = tvd_forward(p, q, labels, 3, 4, reduction, -100);
    auto moved = p;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double h = 1e-7;
      moved[i] = p[i] + h;
      const double up = tvd_forward(moved, q, labels, 3, 4, reduction, -100).loss[0];
      moved[i] = p[i] - h;
      const double down = tvd_forward(moved, q, labels, 3, 4, reduction, -100).loss[0];
      moved[i] = p[i];
      EXPECT_NEAR(out.grad[i], (up - down) / (2 * h), 1e-7) << i;
    }
  }
}

}  // namespace
}  // namespace kernelwatch::kernels::oracle
