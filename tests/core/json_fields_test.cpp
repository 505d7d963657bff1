#include "core/json_fields.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

using nlohmann::json;

const json kDoc = json::parse(R"({
  "name": "tvd", "count": 3, "big": 9007199254740993, "whole": 577632.0, "half": 1.5,
  "huge": 18446744073709551615, "flag": true, "nothing": null, "at": "2025-07-17T18:18:16Z",
  "status": "passed", "nested": {"list": [1, "two", {"deep": false}]}
})");

std::string message_of(const Status& status) {
  return status ? "(ok)" : status.error().message;
}

template <class T>
std::string message_of(const Result<T>& result) {
  return result ? "(ok)" : result.error().message;
}

TEST(JsonField, ReadsTypedValues) {
  const JsonField doc(kDoc, "doc");
  EXPECT_EQ(doc["name"].string().value(), "tvd");
  EXPECT_EQ(doc["count"].integer().value(), 3);
  EXPECT_EQ(doc["flag"].boolean().value(), true);
  EXPECT_EQ(doc["half"].number().value(), 1.5);
  EXPECT_EQ(doc["at"].timestamp().value(), parse_timestamp("2025-07-17T18:18:16Z").value());
  EXPECT_EQ(doc["nested"]["list"][1].string().value(), "two");
  EXPECT_EQ(doc["nested"]["list"][2]["deep"].boolean().value(), false);
  const auto list = doc["nested"]["list"].array();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[2].path(), "doc.nested.list[2]");
  EXPECT_EQ(doc["nested"].keys(), std::vector<std::string>{"list"});
}

TEST(JsonField, IntegersAreExactWithin64Bits) {
  const JsonField doc(kDoc);
  EXPECT_EQ(doc["big"].integer().value(), 9007199254740993);  // not representable as a double
  EXPECT_EQ(doc["whole"].integer().value(), 577632);
  EXPECT_EQ(message_of(doc["half"].integer()), "half: expected an integer");
  EXPECT_EQ(message_of(doc["huge"].integer()), "huge: expected an integer");
  EXPECT_EQ(message_of(doc["name"].integer()), "name: expected an integer");
}

TEST(JsonField, ErrorsNameThePath) {
  const JsonField doc(kDoc, "run");
  EXPECT_EQ(message_of(doc["spec"]["timing"].object()), "run.spec.timing: missing");
  EXPECT_EQ(message_of(doc["name"].number()), "run.name: expected a number");
  EXPECT_EQ(message_of(doc["count"].string()), "run.count: expected a string");
  EXPECT_EQ(message_of(doc["nested"]["list"][0].object()),
            "run.nested.list[0]: expected an object");
  EXPECT_EQ(message_of(doc["nested"].array()), "run.nested: expected an array");
  EXPECT_EQ(message_of(doc["count"].boolean()), "run.count: expected true or false");
  EXPECT_EQ(message_of(doc["name"].string("a duration")), "(ok)");
  EXPECT_EQ(message_of(doc["count"].string("a duration")), "run.count: expected a duration");
  EXPECT_EQ(message_of(doc["status"].parsed(parse_timestamp)),
            "run.status: timestamp \"passed\" is not RFC 3339 (like 2025-07-17T18:18:16.000Z)");
  EXPECT_EQ(doc["name"].integer().error().code, ErrorCode::ParseError);
}

TEST(JsonField, NullIsAbsentUnlessTheErrorsTakeItForAValue) {
  const JsonField doc(kDoc);
  EXPECT_FALSE(doc["nothing"].present());
  EXPECT_EQ(message_of(doc["nothing"].string()), "nothing: missing");
  EXPECT_EQ(doc["nothing"].string_or("fallback").value(), "fallback");
  EXPECT_EQ(doc["absent"].integer_or(7).value(), 7);
  EXPECT_EQ(message_of(doc["name"].integer_or(7)), "name: expected an integer");

  const JsonErrors strict{"kernelwatch.json", ErrorCode::InvalidArgument, true, false};
  const JsonField config(kDoc, "", strict);
  EXPECT_TRUE(config["nothing"].present());
  EXPECT_EQ(message_of(config["nothing"].string_or("fallback")),
            "kernelwatch.json: nothing: expected a string, got null");
  EXPECT_EQ(message_of(config["half"].integer()),
            "kernelwatch.json: half: expected an integer, got number");
  EXPECT_EQ(message_of(config.array()), "kernelwatch.json: expected an array, got object");
  EXPECT_EQ(config["half"].integer().error().code, ErrorCode::InvalidArgument);

  const JsonErrors exact{"kernelwatch.json", ErrorCode::InvalidArgument, true, false, false};
  EXPECT_EQ(message_of(JsonField(kDoc, "", exact)["whole"].integer()),
            "kernelwatch.json: whole: expected an integer, got number");
}

TEST(JsonField, AMemberOfANonObjectIsAbsent) {
  const JsonField doc(kDoc, "doc");
  EXPECT_FALSE(doc["name"]["inner"].present());
  EXPECT_EQ(doc["name"]["inner"].path(), "doc.name.inner");
  EXPECT_FALSE(doc["nested"]["list"][7].present());
  EXPECT_TRUE(doc["nested"]["list"][7].value().is_null());
}

TEST(JsonField, ErrorsKeepTheCauseCode) {
  const JsonField doc(kDoc, "doc");
  const Status error = doc["at"].error(Error{ErrorCode::NotFound, "no such file"});
  EXPECT_EQ(error.error().code, ErrorCode::NotFound);
  EXPECT_EQ(error.error().message, "doc.at: no such file");
  EXPECT_EQ(message_of(Status(doc.error("whole document"))), "doc: whole document");
}

}  // namespace
}  // namespace kernelwatch::core
