// Every CPU case against the float64 oracle over the sweep of shapes and options (hidden 1000
// and 4097, vocab 1, 3 and 50257, single rows, every reduction, no/some/all rows ignored), with
// NaN-poisoned outputs and, for the fused provider, two bit-identical runs.
#include <cstdlib>
#include <random>

#include <gtest/gtest.h>

#include "kernels/registry.hpp"
#include "tests/kernels/case_check.hpp"

namespace kernelwatch::kernels::testing {
namespace {

// KW_TEST_SEED reproduces a run; otherwise each run draws fresh inputs.
std::uint64_t base_seed() {
  if (const char* text = std::getenv("KW_TEST_SEED")) return std::strtoull(text, nullptr, 10);
  return std::random_device{}();
}

class CpuProviderTest : public ::testing::TestWithParam<CaseId> {
 protected:
  void check(DType dtype) {
    const std::uint64_t seed = base_seed();
    SCOPED_TRACE("KW_TEST_SEED=" + std::to_string(seed));
    std::uint64_t offset = 0;
    for (const CaseSpec& spec : sweep(GetParam().kernel, dtype)) {
      EXPECT_TRUE(matches_oracle(GetParam(), spec, seed + offset++));
    }
  }
};

TEST_P(CpuProviderTest, Fp32MatchesOracle) {
  check(DType::Fp32);
}
TEST_P(CpuProviderTest, Bf16MatchesOracle) {
  check(DType::Bf16);
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuProviderTest, ::testing::ValuesIn(cases_for(Backend::Cpu)),
                         [](const auto& info) { return test_name(info.param); });

}  // namespace
}  // namespace kernelwatch::kernels::testing
