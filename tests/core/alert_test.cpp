#include "core/alert.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

using nlohmann::json;
using std::chrono::nanoseconds;

Alert sample() {
  Alert a;
  a.id = "k@run-1";
  a.key = {"tvd/forward", "liger", "tokens1-vocab2-fp32", "nvidia-h100", "proto", "sha256:1"};
  a.kind = AlertKind::Step;
  a.direction = Direction::Regression;
  a.state = AlertState::Acknowledged;
  a.fired = {"run-2", parse_timestamp("2025-07-17T18:18:16Z").value(), nanoseconds(1100)};
  a.onset = {"run-1", parse_timestamp("2025-07-17T18:08:16Z").value(), nanoseconds(1090)};
  a.closed_by =
      AlertRun{"run-3", parse_timestamp("2025-07-17T18:28:16Z").value(), nanoseconds(1000)};
  a.band = {nanoseconds(900), nanoseconds(1050), nanoseconds(1000)};
  a.baseline_runs = 20;
  a.relative_change = 0.1;
  a.attribution = {{"implementation.version", "0.6.1", "0.6.2"}};
  a.explanation = "slower";
  Alert member = a;
  member.id = "k@run-1/member";
  member.closed_by.reset();
  a.members = {member};
  return a;
}

TEST(AlertJson, RoundTrips) {
  const Alert a = sample();
  const auto back = alert_from_json(to_json(a));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_json(*back), to_json(a));
  EXPECT_EQ(back->members.size(), 1u);
  EXPECT_EQ(back->closed_by->external_id, "run-3");
}

TEST(AlertJson, ReadsTheDocumentsOfKernelwatch01) {
  json doc = to_json(sample());
  for (const char* field :
       {"protocol", "closedBy", "onsetExternalId", "onsetObservedAt", "onsetMedian", "band",
        "baselineRuns", "relativeChange", "attribution", "incident", "members", "explanation"}) {
    doc.erase(field);
  }
  const auto back = alert_from_json(doc);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->onset.external_id, "run-2");
  EXPECT_EQ(back->baseline_runs, 0u);
  EXPECT_FALSE(back->closed_by);
}

TEST(AlertJson, ErrorsNameTheFieldsPath) {
  const auto message = [](const char* pointer, const json& value) {
    json doc = to_json(sample());
    doc[json::json_pointer(pointer)] = value;
    const auto back = alert_from_json(doc);
    return back ? std::string("(ok)") : back.error().message;
  };
  EXPECT_EQ(message("/id", 5), "id: expected a string");
  EXPECT_EQ(message("/band/lower", "low"), "band.lower: expected an integer");
  EXPECT_EQ(message("/closedBy/observedAt", "soon"),
            "closedBy.observedAt: timestamp \"soon\" is not RFC 3339 (like "
            "2025-07-17T18:18:16.000Z)");
  EXPECT_EQ(message("/members/0/kind", "spike"),
            "members[0].kind: unknown alert kind \"spike\" (known: step, drift, environment, "
            "failed)");
  EXPECT_EQ(message("/attribution/0/to", nullptr), "attribution[0].to: missing");
  json doc = to_json(sample());
  doc.erase("direction");
  EXPECT_EQ(alert_from_json(doc).error().message, "direction: missing");
  EXPECT_EQ(alert_from_json(JsonField(json::array(), "alert")).error().message,
            "alert: expected an object");
}

// The short id is sha256 of the long id, cut to 12 hex digits (the value below is Python's
// hashlib.sha256(...).hexdigest()[:12], an independent computation).
TEST(ShortAlertId, IsTheFirst12HexDigitsOfTheLongIdsSha256) {
  const std::string long_id =
      "sha256:ab12@layer_norm/backward/liger/nvidia-h100/hidden1024/2025-07-17T18-18-16Z";
  EXPECT_EQ(short_alert_id(long_id), "252a37702b9a");
  EXPECT_EQ(short_alert_id(long_id), short_alert_id(std::string(long_id)));
  EXPECT_NE(short_alert_id(long_id), short_alert_id(long_id + "/drift"));
  EXPECT_TRUE(is_short_alert_id(short_alert_id(long_id)));
}

TEST(ShortAlertId, RecognisesOnlyTwelveLowerCaseHexDigits) {
  EXPECT_TRUE(is_short_alert_id("0123456789ab"));
  EXPECT_FALSE(is_short_alert_id("0123456789AB"));
  EXPECT_FALSE(is_short_alert_id("0123456789a"));
  EXPECT_FALSE(is_short_alert_id("0123456789abc"));
  EXPECT_FALSE(is_short_alert_id("0123456789ag"));
  EXPECT_FALSE(is_short_alert_id("k@run-1"));
}

}  // namespace
}  // namespace kernelwatch::core

namespace kernelwatch::core {
namespace {

// One operator action type from the API to the stored row and the replay (issue #38 item 3): its
// names are the alert_actions table's.
TEST(OperatorAction, ItsNamesReadBackAndNothingElseIsOne) {
  for (const auto action : {OperatorAction::Acknowledge, OperatorAction::Rebaseline}) {
    EXPECT_EQ(parse_operator_action(to_string(action)), action);
  }
  EXPECT_EQ(to_string(OperatorAction::Rebaseline), "rebaseline");
  EXPECT_EQ(parse_operator_action("ack"), std::nullopt);
  EXPECT_EQ(parse_operator_action("Rebaseline"), std::nullopt);
  EXPECT_EQ(parse_operator_action(""), std::nullopt);
}

}  // namespace
}  // namespace kernelwatch::core
