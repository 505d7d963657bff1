#include "core/alert.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

using nlohmann::json;
using std::chrono::nanoseconds;

Alert sample() {
  Alert a;
  a.id = AlertId("k@run-1");
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
  member.id = AlertId("k@run-1/member");
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
TEST(AlertId, ItsShortFormIsTheFirst12HexDigitsOfTheLongFormsSha256) {
  const AlertId id(
      "sha256:ab12@layer_norm/backward/liger/nvidia-h100/hidden1024/2025-07-17T18-18-16Z");
  EXPECT_EQ(id.short_form(), "252a37702b9a");
  EXPECT_EQ(id.long_form(),
            "sha256:ab12@layer_norm/backward/liger/nvidia-h100/hidden1024/2025-07-17T18-18-16Z");
  EXPECT_NE(id.short_form(), AlertId(id.long_form() + "/drift").short_form());
  EXPECT_TRUE(AlertRef(id.short_form()).is_short());
  EXPECT_EQ(AlertId().short_form(), "");
}

TEST(AlertRef, RecognisesOnlyTwelveLowerCaseHexDigitsAsAShortForm) {
  EXPECT_TRUE(AlertRef("0123456789ab").is_short());
  EXPECT_FALSE(AlertRef("0123456789AB").is_short());
  EXPECT_FALSE(AlertRef("0123456789a").is_short());
  EXPECT_FALSE(AlertRef("0123456789abc").is_short());
  EXPECT_FALSE(AlertRef("0123456789ag").is_short());
  EXPECT_FALSE(AlertRef("k@run-1").is_short());
}

TEST(AlertRef, NamesAnAlertByItsShortFormOrItsLongFormOnly) {
  const AlertId id("k@run-1");
  EXPECT_TRUE(AlertRef(id.short_form()).names(id));
  EXPECT_TRUE(AlertRef("k@run-1").names(id));
  EXPECT_FALSE(AlertRef("k@run-2").names(id));
  EXPECT_FALSE(AlertRef(AlertId("k@run-2").short_form()).names(id));
  // A long form that happens to look short is still compared as a short form: the 12 hex digits
  // of an id, never the id itself.
  const AlertId hexlike("0123456789ab");
  EXPECT_FALSE(AlertRef("0123456789ab").names(hexlike));
  EXPECT_TRUE(AlertRef(hexlike.short_form()).names(hexlike));
}

}  // namespace
}  // namespace kernelwatch::core
