#include "kernels/layer_norm/layer_norm.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace kernelwatch::kernels {
namespace {

// Host tensors for one small fp32 LayerNorm, wired into the argument structs.
struct Fixture {
  std::int64_t rows;
  std::int64_t n;
  std::vector<float> x, w, b, y, mean, rstd, dy, dx, dw, db;

  Fixture(std::int64_t rows_, std::int64_t n_)
      : rows(rows_),
        n(n_),
        x(rows * n),
        w(n, 1.0f),
        b(n, 0.0f),
        y(rows * n),
        mean(rows),
        rstd(rows),
        dy(rows * n, 1.0f),
        dx(rows * n),
        dw(n),
        db(n) {}

  LayerNormForward forward() {
    return LayerNormForward{ref(x, rows, n), ref(w, 1, n),       ref(b, 1, n),
                            ref(y, rows, n), ref(mean, rows, 1), ref(rstd, rows, 1)};
  }
  LayerNormBackward backward() {
    return LayerNormBackward{ref(dy, rows, n),   ref(x, rows, n),    ref(w, 1, n),
                             ref(mean, rows, 1), ref(rstd, rows, 1), ref(dx, rows, n),
                             ref(dw, 1, n),      ref(db, 1, n)};
  }
  static TensorRef ref(std::vector<float>& data, std::int64_t r, std::int64_t c) {
    return TensorRef{data.data(), ElementType::Fp32, r, c};
  }
};

TEST(LayerNormCpu, NormalizesAHandComputedRow) {
  for (Provider provider : {Provider::Fused, Provider::Reference}) {
    Fixture f(1, 4);
    f.x = {1, 2, 3, 4};
    f.w = {1, 2, 1, 1};
    f.b = {0, 0, 0, 1};
    ASSERT_TRUE(layer_norm_forward_cpu(provider, f.forward()));
    const double rstd = 1.0 / std::sqrt(1.25 + 1e-6);
    EXPECT_FLOAT_EQ(f.mean[0], 2.5f);
    EXPECT_FLOAT_EQ(f.rstd[0], static_cast<float>(rstd));
    EXPECT_FLOAT_EQ(f.y[0], static_cast<float>(-1.5 * rstd));
    EXPECT_FLOAT_EQ(f.y[1], static_cast<float>(-0.5 * rstd * 2));
    EXPECT_FLOAT_EQ(f.y[3], static_cast<float>(1.5 * rstd + 1));
    // With dy = 1 and w = 1 everywhere, dx is 0 (a shift of all inputs leaves y unchanged) and
    // db counts the rows.
    f.w = {1, 1, 1, 1};
    std::vector<std::byte> workspace(
        layer_norm_backward_cpu_workspace_bytes(provider, f.rows, f.n));
    ASSERT_TRUE(layer_norm_backward_cpu(provider, f.backward(), workspace));
    for (float v : f.dx) EXPECT_NEAR(v, 0.0f, 1e-6f);
    for (float v : f.db) EXPECT_FLOAT_EQ(v, 1.0f);
  }
}

TEST(LayerNormCpu, RejectsMismatchedTensorsNamingThem) {
  Fixture f(3, 8);
  auto args = f.forward();
  args.weight.cols = 7;
  auto status = layer_norm_forward_cpu(Provider::Fused, args);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, core::ErrorCode::InvalidArgument);
  EXPECT_NE(status.error().message.find("weight must be 1 x 8, got 1 x 7"), std::string::npos)
      << status.error().message;

  args = f.forward();
  args.y.type = ElementType::Bf16;
  status = validate(args);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("y must be fp32"), std::string::npos);

  args = f.forward();
  args.mean.data = nullptr;
  status = validate(args);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("mean is missing"), std::string::npos);

  args = f.forward();
  args.eps = 0.0;
  EXPECT_FALSE(validate(args));

  auto backward = f.backward();
  backward.dy.rows = 2;
  status = validate(backward);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("dy must be 3 x 8, got 2 x 8"), std::string::npos);

  backward = f.backward();
  backward.x.type = ElementType::Int64;
  EXPECT_FALSE(validate(backward));
}

TEST(LayerNormCpu, RejectsAShortWorkspace) {
  Fixture f(4, 16);
  std::vector<std::byte> workspace(8);
  const auto status = layer_norm_backward_cpu(Provider::Fused, f.backward(), workspace);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("workspace"), std::string::npos);
  EXPECT_EQ(layer_norm_backward_cpu_workspace_bytes(Provider::Reference, 4, 16), 0u);
}

TEST(LayerNormCpu, ShapeLimits) {
  EXPECT_TRUE(validate_layer_norm_shape(1, 1, DType::Fp32, 1e-6));
  EXPECT_TRUE(validate_layer_norm_shape(4096, 65536, DType::Bf16, 1e-6));
  const auto wide = validate_layer_norm_shape(1, 65537, DType::Fp32, 1e-6);
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().message.find("65537"), std::string::npos);
  EXPECT_FALSE(validate_layer_norm_shape(0, 10, DType::Fp32, 1e-6));
  EXPECT_FALSE(validate_layer_norm_shape(10, 10, DType::Fp16, 1e-6));
  EXPECT_FALSE(validate_layer_norm_shape(10, 10, DType::Fp32, -1.0));
  EXPECT_FALSE(validate_layer_norm_shape(10, 10, DType::Fp32, std::nan("")));
}

}  // namespace
}  // namespace kernelwatch::kernels
