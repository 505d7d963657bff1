#include "core/error.hpp"

#include <string>

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

Result<int> twice(int x) {
  if (x < 0) return fail(ErrorCode::InvalidArgument, "negative: " + std::to_string(x));
  return 2 * x;
}

Status at_most_ten(int x) {
  if (x > 10) return fail(ErrorCode::InvalidArgument, "over ten");
  return {};
}

int evaluated = 0;

Result<std::string> chain(int x) {
  const int doubled = KW_TRY(twice(x));
  KW_TRY(at_most_ten(doubled));
  ++evaluated;
  return std::to_string(doubled);
}

TEST(KwTry, YieldsTheValueOrReturnsTheFirstErrorUnchanged) {
  evaluated = 0;
  EXPECT_EQ(chain(3).value(), "6");
  EXPECT_EQ(evaluated, 1);
  const auto negative = chain(-1);
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().message, "negative: -1");
  const auto big = chain(6);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().message, "over ten");
  EXPECT_EQ(evaluated, 1);  // nothing after a failed step ran
}

}  // namespace
}  // namespace kernelwatch::core
