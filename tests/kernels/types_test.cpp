#include "kernels/types.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace kernelwatch::kernels {
namespace {

// Pass and provider names are core's (tests/core/names_test.cpp); kernels are named by the
// catalogue (tests/kernels/catalogue_test.cpp).
TEST(KernelNames, RoundTrip) {
  for (Backend backend : {Backend::Cpu, Backend::Cuda}) {
    EXPECT_EQ(parse_backend(to_string(backend)).value(), backend);
  }
  for (Reduction reduction :
       {Reduction::BatchMean, Reduction::Sum, Reduction::Mean, Reduction::None}) {
    EXPECT_EQ(parse_reduction(to_string(reduction)).value(), reduction);
  }
  EXPECT_EQ(to_string(Backend::Cuda), "cuda");
}

TEST(KernelNames, UnknownNamesListTheKnownOnes) {
  const auto parsed = parse_reduction("average");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, core::ErrorCode::InvalidArgument);
  EXPECT_NE(parsed.error().message.find("\"average\""), std::string::npos);
  EXPECT_NE(parsed.error().message.find("batchmean"), std::string::npos);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bf16(-2.0f).bits, 0xc000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  EXPECT_EQ(to_bf16(1.0f + 0x1.0p-8f).bits, 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between mantissas 1 and 2: goes to 2.
  EXPECT_EQ(to_bf16(1.0f + 3 * 0x1.0p-8f).bits, 0x3f82);
  EXPECT_EQ(to_bf16(1.0f + 0x1.0p-8f + 0x1.0p-20f).bits, 0x3f81);
  EXPECT_TRUE(std::isnan(to_float(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(to_float(to_bf16(std::numeric_limits<float>::infinity()))));
  for (float value : {0.0f, 1.5f, -3.25f, 0.0078125f}) EXPECT_EQ(to_float(to_bf16(value)), value);
}

TEST(ElementTypes, Fp16IsRejectedWithItsName) {
  EXPECT_EQ(element_type(DType::Fp32).value(), ElementType::Fp32);
  EXPECT_EQ(element_type(DType::Bf16).value(), ElementType::Bf16);
  const auto fp16 = element_type(DType::Fp16);
  ASSERT_FALSE(fp16);
  EXPECT_NE(fp16.error().message.find("fp16"), std::string::npos);
  EXPECT_EQ(element_size(ElementType::Bf16), 2u);
  EXPECT_EQ(element_size(ElementType::Int64), 8u);
}

TEST(ValidateExtent, RejectsZeroNegativeAndOverflowingSizes) {
  EXPECT_TRUE(validate_extent("t", 16384, 131072, ElementType::Fp32));
  const auto zero = validate_extent("tvd: p", 0, 10, ElementType::Fp32);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message.find("tvd: p"), std::string::npos);
  EXPECT_NE(zero.error().message.find("0 x 10"), std::string::npos);
  EXPECT_FALSE(validate_extent("t", 5, -1, ElementType::Fp32));
  const std::int64_t big = std::int64_t{1} << 31;
  const auto overflow = validate_extent("t", big, big, ElementType::Fp32);
  ASSERT_FALSE(overflow);
  EXPECT_NE(overflow.error().message.find("overflows"), std::string::npos);
  // Elements fit, bytes do not.
  EXPECT_FALSE(
      validate_extent("t", std::int64_t{1} << 31, std::int64_t{1} << 31, ElementType::Int64));
  EXPECT_FALSE(
      validate_extent("t", std::numeric_limits<std::int64_t>::max(), 2, ElementType::Bf16));
}

}  // namespace
}  // namespace kernelwatch::kernels
