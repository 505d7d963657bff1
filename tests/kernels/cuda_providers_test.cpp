// GPU tests (CTest label `gpu`): every CUDA case against the float64 oracle over the same sweep
// as the CPU tests, the asynchronous launch path, out-of-memory as an error, and the 64-bit
// indexing shape 16384 x 131072. Each test skips where no GPU is present.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "kernels/registry.hpp"
#include "tests/kernels/case_check.hpp"

namespace kernelwatch::kernels::testing {
namespace {

#define KW_REQUIRE_GPU()                                             \
  do {                                                               \
    if (auto kw_gpu_ = backend_available(Backend::Cuda); !kw_gpu_) { \
      GTEST_SKIP() << kw_gpu_.error().message;                       \
    }                                                                \
  } while (false)

class CudaProviderTest : public ::testing::TestWithParam<CaseId> {
 protected:
  void check(DType dtype) {
    KW_REQUIRE_GPU();
    const std::uint64_t seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::uint64_t offset = 0;
    for (const CaseSpec& spec : sweep(GetParam().kernel, dtype)) {
      EXPECT_TRUE(matches_oracle(GetParam(), spec, seed + offset++));
    }
  }
};

TEST_P(CudaProviderTest, Fp32MatchesOracle) {
  check(DType::Fp32);
}
TEST_P(CudaProviderTest, Bf16MatchesOracle) {
  check(DType::Bf16);
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaProviderTest, ::testing::ValuesIn(cases_for(Backend::Cuda)),
                         [](const auto& info) { return test_name(info.param); });

TEST(CudaCase, LaunchIsAsynchronousOnItsStream) {
  KW_REQUIRE_GPU();
  CaseSpec spec;
  spec.rows = 256;
  spec.cols = 4096;
  auto instance = create_case(
      CaseId{KernelRef("layer_norm"), Pass::Full, Provider::Fused, Backend::Cuda}, spec);
  ASSERT_TRUE(instance) << instance.error().message;
  EXPECT_NE((*instance)->stream(), nullptr);
  ASSERT_TRUE((*instance)->prepare(1));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*instance)->launch());
  ASSERT_TRUE((*instance)->synchronize());
}

TEST(CudaCase, OutOfMemoryIsAnError) {
  KW_REQUIRE_GPU();
  CaseSpec spec;
  spec.rows = std::int64_t{1} << 31;
  spec.cols = 65536;  // 512 TiB
  const auto created = create_case(
      CaseId{KernelRef("layer_norm"), Pass::Forward, Provider::Fused, Backend::Cuda}, spec);
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, core::ErrorCode::OutOfMemory) << created.error().message;
  // The device is still usable afterwards.
  spec.rows = 4;
  spec.cols = 4;
  EXPECT_TRUE(matches_oracle(
      CaseId{KernelRef("layer_norm"), Pass::Forward, Provider::Fused, Backend::Cuda}, spec, 1));
}

// 16384 x 131072 = 2^31 elements: any 32-bit index overflows. The loss is checked in full, the
// gradients on rows at the start, middle and end.
TEST(CudaCase, SixtyFourBitIndexing) {
  KW_REQUIRE_GPU();
  CaseSpec spec;
  spec.rows = 16384;
  spec.cols = 131072;
  spec.dtype = DType::Bf16;
  spec.reduction = Reduction::Sum;
  for (const CaseId& id :
       {CaseId{KernelRef("tvd"), Pass::Full, Provider::Fused, Backend::Cuda},
        CaseId{KernelRef("tvd"), Pass::Forward, Provider::Reference, Backend::Cuda}}) {
    SCOPED_TRACE(id.name());
    auto instance = create_case(id, spec);
    if (!instance && instance.error().code == core::ErrorCode::OutOfMemory) {
      GTEST_SKIP() << instance.error().message;
    }
    ASSERT_TRUE(instance) << instance.error().message;
    ASSERT_TRUE((*instance)->prepare(99));
    ASSERT_TRUE((*instance)->poison_outputs());
    ASSERT_TRUE((*instance)->run());
    const auto inputs = (*instance)->inputs().value();
    const auto outputs = (*instance)->outputs().value();
    const HostTensor& p = *find_tensor(inputs, "p");
    const HostTensor& q = *find_tensor(inputs, "q");
    double loss = 0.0;
    for (std::int64_t i = 0; i < p.elements(); ++i)
      loss += 0.5 * std::fabs(p.value(i) - q.value(i));
    EXPECT_NEAR(find_tensor(outputs, "loss")->value(0), loss, 1e-2 * loss);
    const HostTensor& grad = *find_tensor(outputs, "grad");
    const HostTensor* dp = find_tensor(outputs, "dp");
    const double g = id.pass == Pass::Full ? find_tensor(inputs, "grad_output")->value(0) : 0.0;
    for (std::int64_t row : {std::int64_t{0}, std::int64_t{8191}, std::int64_t{16383}}) {
      for (std::int64_t c = 0; c < spec.cols; ++c) {
        const std::int64_t i = row * spec.cols + c;
        const double d = p.value(i) - q.value(i);
        const double want = d > 0 ? 0.5 : (d < 0 ? -0.5 : 0.0);
        ASSERT_EQ(grad.value(i), want) << "row " << row << " column " << c;
        if (dp != nullptr) {
          ASSERT_NEAR(dp->value(i), want * g, 1e-2 * std::fabs(want * g)) << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kernelwatch::kernels::testing
