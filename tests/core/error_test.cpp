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

int contexts_built = 0;

std::string context(std::string text) {
  ++contexts_built;
  return text;
}

Result<int> twice_in(int x) {
  const int doubled = KW_TRY_WITH(twice(x), context("doubling"));
  KW_TRY_WITH(at_most_ten(doubled), context("bounding"));
  return doubled;
}

TEST(KwTryWith, PutsTheContextInFrontOfTheErrorAndBuildsItOnlyThen) {
  contexts_built = 0;
  EXPECT_EQ(twice_in(2).value(), 4);
  EXPECT_EQ(contexts_built, 0);
  const auto negative = twice_in(-1);
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(negative.error().message, "doubling: negative: -1");
  EXPECT_EQ(twice_in(6).error().message, "bounding: over ten");
  EXPECT_EQ(contexts_built, 2);
}

}  // namespace
}  // namespace kernelwatch::core
