#include "core/names.hpp"

#include <string>

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

TEST(Names, RoundTrip) {
  for (Pass pass : {Pass::Forward, Pass::Backward, Pass::Full}) {
    EXPECT_EQ(parse_pass(to_string(pass)).value(), pass);
  }
  for (Provider provider : {Provider::Fused, Provider::Reference}) {
    EXPECT_EQ(parse_provider(to_string(provider)).value(), provider);
  }
  EXPECT_EQ(to_string(Provider::Fused), "kernelwatch-fused");
  EXPECT_EQ(to_string(Provider::Reference), "kernelwatch-reference");
  EXPECT_EQ(to_string(Pass::Backward), "backward");
}

TEST(Names, ListsEveryValueInOrder) {
  EXPECT_EQ(names_of(kPasses), "forward, backward, full");
  EXPECT_EQ(names_of(kProviders), "kernelwatch-fused, kernelwatch-reference");
}

TEST(Names, UnknownNamesListTheKnownOnes) {
  // A kernel is named by the catalogue of kernels/ (tests/kernels/catalogue_test.cpp), the
  // kernels liger-bench runs by runners/ (tests/runners/liger_bench_test.cpp).
  const auto pass = parse_pass("sideways");
  ASSERT_FALSE(pass);
  EXPECT_EQ(pass.error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(pass.error().message, "unknown pass \"sideways\" (known: forward, backward, full)");
  // Imported runs' providers are labels, not kernelwatch's own providers.
  EXPECT_EQ(parse_provider("liger").error().message,
            "unknown provider \"liger\" (known: kernelwatch-fused, kernelwatch-reference)");
}

}  // namespace
}  // namespace kernelwatch::core
