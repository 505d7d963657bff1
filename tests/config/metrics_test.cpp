// The config file's `metrics` section (config/metrics.cpp): per_key all | problems | none, its
// default, its errors and its place in the redacted config.
#include "config/metrics.hpp"

#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"

namespace kernelwatch::config {
namespace {

Result<Config> parse(const std::string& text) {
  return parse_config(text, "kernelwatch.json", Environment::from_map({}), "/etc/kernelwatch");
}

std::string error_of(const std::string& text) {
  const auto config = parse(text);
  return config ? "(no error)" : config.error().message;
}

TEST(MetricsConfig, PerKeyDefaultsToProblemsAndReadsEachValue) {
  auto config = parse("{}");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->metrics.per_key, PerKeyMetrics::Problems);
  EXPECT_EQ(redacted_json(*config)["metrics"], (nlohmann::json{{"per_key", "problems"}}));
  for (const auto& [text, value] :
       {std::pair{"all", PerKeyMetrics::All}, std::pair{"problems", PerKeyMetrics::Problems},
        std::pair{"none", PerKeyMetrics::None}}) {
    config = parse(std::string(R"({"metrics": {"per_key": ")") + text + "\"}}");
    ASSERT_TRUE(config.has_value()) << config.error().message;
    EXPECT_EQ(config->metrics.per_key, value) << text;
    EXPECT_EQ(to_string(value), text);
    // What the daemon logs loads back to the same setting.
    const auto again =
        parse_config(redacted_json(*config).dump(), "redacted", Environment::from_map({}), "/");
    ASSERT_TRUE(again.has_value()) << again.error().message;
    EXPECT_EQ(again->metrics.per_key, value);
  }
  // An empty section keeps the default.
  config = parse(R"({"metrics": {}})");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->metrics.per_key, PerKeyMetrics::Problems);
}

TEST(MetricsConfig, BadValuesNameTheFieldAndTheChoices) {
  EXPECT_EQ(error_of(R"({"metrics": {"per_key": "some"}})"),
            "kernelwatch.json: metrics.per_key: \"some\" is not one of all, problems, none "
            "(which keys get series of their own)");
  EXPECT_EQ(error_of(R"({"metrics": {"per_key": "ALL"}})"),
            "kernelwatch.json: metrics.per_key: \"ALL\" is not one of all, problems, none "
            "(which keys get series of their own)");
  EXPECT_NE(
      error_of(R"({"metrics": {"per_key": true}})").find("metrics.per_key: expected a string"),
      std::string::npos)
      << error_of(R"({"metrics": {"per_key": true}})");
  EXPECT_NE(error_of(R"({"metrics": {"per_keys": "all"}})").find("metrics.per_keys: unknown field"),
            std::string::npos)
      << error_of(R"({"metrics": {"per_keys": "all"}})");
  EXPECT_NE(error_of(R"({"metrics": "all"})").find("metrics: expected an object"),
            std::string::npos)
      << error_of(R"({"metrics": "all"})");
  // A long value (a secret pasted into the wrong field) is not echoed.
  const std::string pasted(80, 'x');
  const std::string message = error_of(R"({"metrics": {"per_key": ")" + pasted + "\"}}");
  EXPECT_EQ(message.find(pasted), std::string::npos) << message;
  EXPECT_NE(message.find("metrics.per_key: the value is not one of all, problems, none"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace kernelwatch::config
