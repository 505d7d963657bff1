// The check the provider tests rely on must itself fail on wrong, unwritten or NaN outputs.
#include "tests/kernels/case_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

namespace kernelwatch::kernels::testing {
namespace {

HostTensor fp32_tensor(const std::vector<float>& values) {
  HostTensor tensor{"t", ElementType::Fp32, 1, static_cast<std::int64_t>(values.size()), {}};
  tensor.bytes.resize(values.size() * sizeof(float));
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

TEST(CaseCheck, RelativeErrorCatchesNaNAndPerturbations) {
  const std::vector<double> want = {1.0, -2.0, 4.0};
  EXPECT_EQ(relative_error(fp32_tensor({1.0f, -2.0f, 4.0f}), want), 0.0);
  EXPECT_NEAR(relative_error(fp32_tensor({1.0f, -2.0f, 4.001f}), want), 0.001 / 4, 1e-7);
  EXPECT_TRUE(std::isinf(relative_error(fp32_tensor({1.0f, NAN, 4.0f}), want)));
  EXPECT_TRUE(std::isinf(relative_error(fp32_tensor({1.0f, -2.0f}), want)));
  // All-zero expectations compare absolutely.
  EXPECT_EQ(relative_error(fp32_tensor({0.0f}), {0.0}), 0.0);
  EXPECT_GT(relative_error(fp32_tensor({1e-3f}), {0.0}), 1e-5);
  // A poisoned (all bits set) bf16 element reads back as NaN.
  HostTensor poisoned{"p", ElementType::Bf16, 1, 1, {std::byte{0xff}, std::byte{0xff}}};
  EXPECT_TRUE(std::isinf(relative_error(poisoned, {1.0})));
}

TEST(CaseCheck, ATermScaleOnlyEverRaisesTheDenominator) {
  const std::vector<double> want = {1.0, -2.0, 4.0};
  const HostTensor got = fp32_tensor({1.0f, -2.0f, 4.001f});
  EXPECT_NEAR(relative_error(got, want, 40.0), 0.001 / 40, 1e-8);
  EXPECT_NEAR(relative_error(got, want, 1.0), 0.001 / 4, 1e-7);  // smaller than |want|: no effect
  EXPECT_TRUE(std::isinf(relative_error(fp32_tensor({NAN, -2.0f, 4.0f}), want, 40.0)));
}

TEST(CaseCheck, LayerNormDxIsJudgedAgainstTheTermsItIsSummedFrom) {
  // Three values per row: dx cancels from terms about as large as itself or larger.
  CaseSpec spec;
  spec.rows = 4;
  spec.cols = 3;
  const CaseId id{KernelRef("layer_norm"), Pass::Backward, Provider::Fused, Backend::Cpu};
  auto instance = create_case(id, spec);
  ASSERT_TRUE(instance);
  ASSERT_TRUE((*instance)->prepare(7));
  const auto inputs = (*instance)->inputs().value();
  const auto scales = error_scales(id, spec, inputs);
  const auto expected = expected_outputs(id, spec, inputs);
  ASSERT_TRUE(scales.contains("dx"));
  double max_dx = 0;
  for (double v : expected.at("dx")) max_dx = std::max(max_dx, std::fabs(v));
  EXPECT_GE(scales.at("dx"), max_dx);
  EXPECT_FALSE(scales.contains("dweight"));  // plain sums: judged against themselves
  EXPECT_EQ(error_scale(scales, "dbias"), 0.0);
  EXPECT_TRUE(error_scales({KernelRef("layer_norm"), Pass::Forward, Provider::Fused, Backend::Cpu},
                           spec, inputs)
                  .empty());
}

TEST(CaseCheck, OracleCoversEveryOutput) {
  for (const CaseId& id : cases_for(Backend::Cpu)) {
    CaseSpec spec;
    spec.rows = 2;
    spec.cols = 3;
    auto instance = create_case(id, spec);
    ASSERT_TRUE(instance);
    ASSERT_TRUE((*instance)->prepare(3));
    const auto expected = expected_outputs(id, spec, (*instance)->inputs().value());
    const auto outputs = (*instance)->outputs().value();
    ASSERT_EQ(expected.size(), outputs.size()) << id.name();
    for (const auto& tensor : outputs) EXPECT_TRUE(expected.count(tensor.name)) << tensor.name;
  }
}

}  // namespace
}  // namespace kernelwatch::kernels::testing
