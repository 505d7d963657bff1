#include "config/environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace kernelwatch::config {
namespace {

TEST(Environment, FromMapKnowsOnlyItsVariables) {
  const auto env = Environment::from_map({{"KERNELWATCH_TOKEN", "abc"}, {"EMPTY", ""}});
  EXPECT_EQ(env.get("KERNELWATCH_TOKEN"), "abc");
  EXPECT_EQ(env.get("EMPTY"), "");
  EXPECT_EQ(env.get("PATH"), std::nullopt);
}

TEST(Environment, ProcessReadsTheRealEnvironment) {
  ASSERT_EQ(::setenv("KW_CONFIG_ENVIRONMENT_TEST", "value-1", 1), 0);
  const auto env = Environment::process();
  EXPECT_EQ(env.get("KW_CONFIG_ENVIRONMENT_TEST"), "value-1");
  ASSERT_EQ(::unsetenv("KW_CONFIG_ENVIRONMENT_TEST"), 0);
  EXPECT_EQ(env.get("KW_CONFIG_ENVIRONMENT_TEST"), std::nullopt);
}

TEST(Environment, ValidatesVariableNames) {
  EXPECT_TRUE(is_valid_variable_name("KERNELWATCH_TOKEN"));
  EXPECT_TRUE(is_valid_variable_name("_x1"));
  EXPECT_FALSE(is_valid_variable_name(""));
  EXPECT_FALSE(is_valid_variable_name("1X"));
  EXPECT_FALSE(is_valid_variable_name("SLACK-URL"));
  EXPECT_FALSE(is_valid_variable_name("https://hooks.example.com/x"));
}

}  // namespace
}  // namespace kernelwatch::config
