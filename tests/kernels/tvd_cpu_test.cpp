#include "kernels/tvd/tvd.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace kernelwatch::kernels {
namespace {

TensorRef ref(std::vector<float>& data, std::int64_t rows, std::int64_t cols) {
  return TensorRef{data.data(), ElementType::Fp32, rows, cols};
}

TEST(TvdCpu, HandComputedRows) {
  for (Provider provider : {Provider::Fused, Provider::Reference}) {
    std::vector<float> p = {0.5f, 0.25f, 0.25f, 0.1f, 0.2f, 0.7f};
    std::vector<float> q = {0.25f, 0.25f, 0.5f, 0.3f, 0.2f, 0.5f};
    std::vector<float> loss(1, NAN);
    std::vector<float> grad(6, NAN);
    TvdForward args{ref(p, 2, 3), ref(q, 2, 3), {}, ref(loss, 1, 1), ref(grad, 2, 3)};
    std::vector<std::byte> workspace(tvd_forward_cpu_workspace_bytes(provider, 2, 3, DType::Fp32));
    ASSERT_TRUE(tvd_forward_cpu(provider, args, workspace));
    // Row sums of |p - q|: 0.5 and 0.4; batchmean: 0.5 * 0.9 / 2.
    EXPECT_NEAR(loss[0], 0.225f, 1e-7f);
    const std::vector<float> expected = {0.25f, 0.0f, -0.25f, -0.25f, 0.0f, 0.25f};
    for (std::size_t i = 0; i < grad.size(); ++i) EXPECT_FLOAT_EQ(grad[i], expected[i]) << i;

    std::vector<float> g = {2.0f};
    std::vector<float> dp(6, NAN);
    std::vector<std::byte> backward_workspace(tvd_backward_cpu_workspace_bytes(provider, 2, 3));
    ASSERT_TRUE(tvd_backward_cpu(
        provider, TvdBackward{ref(grad, 2, 3), ref(g, 1, 1), ref(dp, 2, 3)}, backward_workspace));
    for (std::size_t i = 0; i < dp.size(); ++i) EXPECT_FLOAT_EQ(dp[i], 2 * expected[i]) << i;
  }
}

TEST(TvdCpu, EveryRowIgnoredGivesZerosNotNaN) {
  for (Provider provider : {Provider::Fused, Provider::Reference}) {
    for (Reduction reduction :
         {Reduction::BatchMean, Reduction::Sum, Reduction::Mean, Reduction::None}) {
      std::vector<float> p = {0.5f, 0.5f, 0.9f, 0.1f};
      std::vector<float> q = {0.1f, 0.9f, 0.5f, 0.5f};
      std::vector<std::int64_t> labels = {-100, -100};
      const bool none = reduction == Reduction::None;
      std::vector<float> loss(none ? 4 : 1, NAN);
      std::vector<float> grad(4, NAN);
      TvdForward args{ref(p, 2, 2),
                      ref(q, 2, 2),
                      TensorRef{labels.data(), ElementType::Int64, 2, 1},
                      ref(loss, none ? 2 : 1, none ? 2 : 1),
                      ref(grad, 2, 2),
                      reduction};
      std::vector<std::byte> workspace(
          tvd_forward_cpu_workspace_bytes(provider, 2, 2, DType::Fp32));
      ASSERT_TRUE(tvd_forward_cpu(provider, args, workspace));
      for (float v : loss) EXPECT_EQ(v, 0.0f) << to_string(reduction);
      for (float v : grad) EXPECT_EQ(v, 0.0f) << to_string(reduction);
    }
  }
  EXPECT_EQ(tvd_scale(Reduction::BatchMean, 0, 10), 0.0);
  EXPECT_EQ(tvd_scale(Reduction::Mean, 0, 10), 0.0);
  EXPECT_EQ(tvd_scale(Reduction::Mean, 4, 10), 1.0 / 40);
  EXPECT_EQ(tvd_scale(Reduction::Sum, 0, 10), 1.0);
}

TEST(TvdCpu, RejectsMismatchedTensorsNamingThem) {
  std::vector<float> p(12), q(12), grad(12), loss(12);
  std::vector<std::int64_t> labels(3);
  TvdForward args{ref(p, 3, 4), ref(q, 4, 3), {}, ref(loss, 1, 1), ref(grad, 3, 4)};
  auto status = validate(args);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("q must be 3 x 4, got 4 x 3"), std::string::npos)
      << status.error().message;

  args.q = ref(q, 3, 4);
  args.labels = TensorRef{labels.data(), ElementType::Fp32, 3, 1};
  status = validate(args);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("labels must be int64"), std::string::npos);

  args.labels = TensorRef{labels.data(), ElementType::Int64, 3, 1};
  args.reduction = Reduction::None;
  status = validate(args);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("loss (reduction none) must be 3 x 4"), std::string::npos);
  args.loss = ref(loss, 3, 4);
  EXPECT_TRUE(validate(args));

  TvdBackward backward{ref(grad, 3, 4), ref(loss, 2, 2), ref(p, 3, 4)};
  status = validate(backward);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("grad_output (1 x 1 or the shape of grad)"),
            std::string::npos);
  backward.grad_output = ref(loss, 3, 4);
  EXPECT_TRUE(validate(backward));

  std::vector<std::byte> small(0);
  args.reduction = Reduction::Sum;
  args.loss = ref(loss, 1, 1);
  status = tvd_forward_cpu(Provider::Reference, args, small);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("workspace"), std::string::npos);
}

TEST(TvdCpu, ShapeLimits) {
  EXPECT_TRUE(validate_tvd_shape(16384, 131072, DType::Fp32));
  EXPECT_TRUE(validate_tvd_shape(1, 1, DType::Bf16));
  EXPECT_FALSE(validate_tvd_shape(0, 5, DType::Fp32));
  EXPECT_FALSE(validate_tvd_shape(5, 5, DType::Fp16));
  EXPECT_FALSE(validate_tvd_shape(std::int64_t{1} << 40, std::int64_t{1} << 30, DType::Bf16));
}

}  // namespace
}  // namespace kernelwatch::kernels
