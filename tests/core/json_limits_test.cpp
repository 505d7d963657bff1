#include "core/json_limits.hpp"

#include <string>

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

std::string nested(std::size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonLimits, DepthAtTheLimitPassesOneMoreIsRefusedAtItsBracket) {
  EXPECT_FALSE(json_depth_exceeded(nested(kMaxJsonDepth)).has_value());
  const auto at = json_depth_exceeded(nested(kMaxJsonDepth + 1));
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(*at, kMaxJsonDepth);  // the bracket that opens level 257
}

TEST(JsonLimits, BracketsInsideStringsAndEscapesDoNotCount) {
  const std::string deep_in_string = "{\"a\": \"" + nested(10000) + "\\\"[[[\"}";
  EXPECT_FALSE(json_depth_exceeded(deep_in_string).has_value());
  EXPECT_TRUE(parse_json_text(deep_in_string).has_value());
}

TEST(JsonLimits, FortySevenThousandLevelsAreRefusedWithoutParsing) {
  std::string text = "{\"run\": " + nested(47000, '[', ']') + "}";
  const auto parsed = parse_json_text(text);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_NE(parsed.error().message.find("nesting deeper than 256 levels"), std::string::npos);
}

TEST(JsonLimits, NumberOutOfRangeIsAnErrorNotAnException) {
  const auto parsed = parse_json_text("{\"median\": 1e400}");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_NE(parsed.error().message.find("out of range"), std::string::npos)
      << parsed.error().message;
}

TEST(JsonLimits, SyntaxErrorKeepsItsPositionAndDropsTheEcho) {
  const auto parsed = parse_json_text("{\n\"token\": secret-value}");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(line_of_offset("{\n\"token\": secret-value}", parsed.error().byte), 2u);
  EXPECT_EQ(parsed.error().message.find("secret"), std::string::npos) << parsed.error().message;
}

TEST(JsonLimits, Utf8Validation) {
  EXPECT_TRUE(valid_utf8("plain ascii"));
  EXPECT_TRUE(valid_utf8("\xC2\xB7 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(valid_utf8("\xFF"));
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(valid_utf8("\xE2\x82"));          // truncated
}

TEST(JsonLimits, PrintableJsonReplacesInvalidUtf8) {
  const nlohmann::json value = std::string("a\xFFz");
  EXPECT_THROW((void)value.dump(), nlohmann::json::type_error);
  EXPECT_EQ(printable_json(value), "\"a\xEF\xBF\xBDz\"");
}

}  // namespace
}  // namespace kernelwatch::core
