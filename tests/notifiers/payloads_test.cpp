#include "notifiers/payloads.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "tests/notifiers/support/samples.hpp"
#include "tests/notifiers/support/test_receiver.hpp"

namespace kernelwatch::notifiers {
namespace {

using nlohmann::json;
using testing::sample_alert;
using testing::sample_notification;

TEST(Notification, RoundTripsThroughTheOutboxForm) {
  Notification n = sample_notification("host/cycle-7", 3);
  n.alerts[1] = sample_alert(1, Notice::Resolved);
  n.alerts[2].alert.kind = AlertKind::Environment;
  n.alerts[2].run_record = nullptr;
  auto back = parse_notification(serialize(n));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->idempotency_key, "host/cycle-7");
  EXPECT_EQ(back->created_at, n.created_at);
  ASSERT_EQ(back->alerts.size(), 3u);
  EXPECT_EQ(back->alerts[0].run().median, n.alerts[0].run().median);
  EXPECT_EQ(core::to_json(back->alerts[0].alert), core::to_json(n.alerts[0].alert));
  EXPECT_EQ(back->alerts[1].notice, Notice::Resolved);
  EXPECT_EQ(back->alerts[1].alert.state, core::AlertState::Resolved);
  EXPECT_EQ(back->alerts[2].alert.kind, AlertKind::Environment);
  EXPECT_TRUE(back->alerts[2].run_record.is_null());
  EXPECT_EQ(back->alerts[0].run_record, n.alerts[0].run_record);
  EXPECT_FALSE(parse_notification("{\"alerts\": 3}"));
  EXPECT_FALSE(parse_notification("not json"));
}

// A notification kernelwatch 0.1 queued before an upgrade is still delivered as it was meant.
TEST(Notification, ReadsTheOutboxFormOfKernelwatch01) {
  const std::string old = R"({"idempotencyKey": "host/abc", "createdAt": "2025-07-17T18:19:16Z",
    "host": "h", "alerts": [{"id": "k@run-8", "benchmark": "tvd/forward", "provider": "liger",
    "workload": "w", "environment": "e", "state": "resolved", "kind": "step",
    "direction": "regression", "medianNs": 1000, "bandLowerNs": 900, "bandUpperNs": 1100,
    "relativeChange": 0.25, "baselineRuns": 7, "attribution": "implementation changed a -> b",
    "externalId": "run-9", "observedAt": "2025-07-17T18:18:16.000Z"}]})";
  auto back = parse_notification(old);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->alerts.size(), 1u);
  const auto& item = back->alerts[0];
  EXPECT_EQ(item.notice, Notice::Resolved);
  EXPECT_EQ(item.alert.id.long_form(), "k@run-8");
  EXPECT_EQ(item.alert.key.benchmark, "tvd/forward");
  EXPECT_EQ(item.run().external_id, "run-9");
  EXPECT_EQ(item.run().median.count(), 1000);
  EXPECT_EQ(item.alert.band.upper.count(), 1100);
  EXPECT_EQ(item.alert.baseline_runs, 7u);
  const json webhook = webhook_payload(*back);
  EXPECT_EQ(webhook["alerts"][0]["state"], "resolved");
  EXPECT_EQ(webhook["alerts"][0]["medianNs"], 1000);
}

TEST(Format, Changes) {
  EXPECT_EQ(format_change(0.0523), "+5.2%");
  EXPECT_EQ(format_change(-0.008), "-0.8%");
}

TEST(WebhookPayload, HasTheVersionedSchemaAlertsAndRuns) {
  const Notification n = sample_notification("k-1", 2);
  const json p = webhook_payload(n);
  EXPECT_EQ(p["version"], kWebhookSchemaVersion);
  EXPECT_EQ(p["type"], "kernelwatch.alerts");
  EXPECT_EQ(p["idempotencyKey"], "k-1");
  EXPECT_EQ(p["host"], "gpu-host-1");
  ASSERT_EQ(p["alerts"].size(), 2u);
  const json& a = p["alerts"][0];
  // Both forms of the alert's id, named: the long one and the short one the API's ack path takes.
  const std::string long_id = a["id"];
  EXPECT_EQ(long_id, n.alerts[0].alert.id.long_form());
  EXPECT_EQ(a["shortId"], core::AlertId(long_id).short_form());
  EXPECT_NE(a["shortId"], a["id"]);
  EXPECT_EQ(a["state"], "firing");
  EXPECT_EQ(a["kind"], "step");
  EXPECT_EQ(a["direction"], "regression");
  EXPECT_EQ(a["key"]["benchmark"], "layer_norm/backward");
  EXPECT_EQ(a["medianNs"], 1'234'000);
  EXPECT_EQ(a["band"]["lowerNs"], 1'100'000);
  EXPECT_EQ(a["band"]["upperNs"], 1'170'000);
  EXPECT_DOUBLE_EQ(a["relativeChange"].get<double>(), 0.0812);
  EXPECT_EQ(a["baselineRuns"], 20);
  EXPECT_EQ(a["attribution"], "implementation version changed 0.6.1 -> 0.6.2");
  EXPECT_EQ(a["observedAt"], "2025-07-17T18:18:16.000Z");
  ASSERT_EQ(p["runs"].size(), 2u);
  EXPECT_EQ(p["runs"][0]["kind"], "BenchmarkRun");
}

TEST(Signature, IsHmacSha256OverTimestampDotBody) {
  // printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac key
  EXPECT_EQ(webhook_signature("key", "1700000000", "{\"a\":1}"),
            "sha256=a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03");
  const auto now = core::Timestamp(std::chrono::seconds(1'700'000'000));
  const std::string sig = webhook_signature("s3cret", "1700000000", "body");
  EXPECT_EQ(sig.size(), 7u + 64u);
  EXPECT_EQ(
      verify_webhook_signature("s3cret", "1700000000", sig, "body", now, std::chrono::seconds(300)),
      SignatureCheck::Valid);
  EXPECT_EQ(
      verify_webhook_signature("s3cret", "1700000000", sig, "b0dy", now, std::chrono::seconds(300)),
      SignatureCheck::Mismatch);
  EXPECT_EQ(
      verify_webhook_signature("other", "1700000000", sig, "body", now, std::chrono::seconds(300)),
      SignatureCheck::Mismatch);
  EXPECT_EQ(verify_webhook_signature("s3cret", "1700000000", sig, "body",
                                     now + std::chrono::minutes(10), std::chrono::seconds(300)),
            SignatureCheck::Stale);
  EXPECT_EQ(verify_webhook_signature("s3cret", "", sig, "body", now, std::chrono::seconds(300)),
            SignatureCheck::Missing);
}

TEST(BuildRequest, CarriesTheIdempotencyKeyAndSignsWebhooks) {
  Destination d;
  d.type = "webhook";
  d.name = "hook";
  d.url = "https://example.org/x";
  d.secret = "s3cret";
  const auto now = core::Timestamp(std::chrono::seconds(1'700'000'000));
  const auto request = build_request(d, sample_notification("idem-1"), {}, now);
  std::map<std::string, std::string> headers(request.headers.begin(), request.headers.end());
  EXPECT_EQ(headers["Idempotency-Key"], "idem-1");
  EXPECT_EQ(headers["Content-Type"], "application/json");
  EXPECT_EQ(headers["X-Kernelwatch-Timestamp"], "1700000000");
  EXPECT_EQ(headers["X-Kernelwatch-Signature"],
            webhook_signature("s3cret", "1700000000", request.body));
  EXPECT_EQ(json::parse(request.body)["idempotencyKey"], "idem-1");

  d.secret.clear();
  const auto unsigned_request = build_request(d, sample_notification("idem-1"), {}, now);
  for (const auto& [name, value] : unsigned_request.headers) {
    EXPECT_NE(name, "X-Kernelwatch-Signature");
  }
}

TEST(SlackPayload, TellsKindsApartAndShowsTheNumbers) {
  Notification n = sample_notification("idem-s", 0);
  n.alerts.push_back(sample_alert(0));
  n.alerts.push_back(sample_alert(1, Notice::Firing, AlertKind::Step, Direction::Improvement));
  n.alerts.push_back(sample_alert(2, Notice::Firing, AlertKind::Environment));
  n.alerts.back().alert.explanation = "60 keys moved +8.0% (median) at one run; torch 2.9 -> 2.10";
  n.alerts.push_back(sample_alert(3, Notice::Resolved));
  FormatOptions options;
  options.public_url = "https://kw.example.org/";
  const json p = slack_payload(n, options);
  EXPECT_EQ(testing::slack_limit_violations(p.dump()), "");
  const std::string text = p["text"];
  EXPECT_NE(text.find("1 regression, 1 incident, 1 improvement, 1 resolved"), std::string::npos)
      << text;
  ASSERT_EQ(p["attachments"].size(), 4u);
  const std::string first = p["attachments"][0]["blocks"][0]["text"]["text"];
  EXPECT_NE(first.find("Regression (kernel step)"), std::string::npos) << first;
  EXPECT_NE(first.find("1.234 ms"), std::string::npos);
  EXPECT_NE(first.find("+8.1%"), std::string::npos);
  EXPECT_NE(first.find("1.100 ms – 1.170 ms"), std::string::npos);
  EXPECT_NE(first.find("from 20 runs"), std::string::npos);
  EXPECT_NE(first.find("implementation version changed 0.6.1 -&gt; 0.6.2"), std::string::npos);
  EXPECT_NE(std::string(p["attachments"][1]["blocks"][0]["text"]["text"]).find("Improvement"),
            std::string::npos);
  // An incident says in its own words what moved and what changed at that run.
  const std::string incident = p["attachments"][2]["blocks"][0]["text"]["text"];
  EXPECT_NE(incident.find("Incident"), std::string::npos) << incident;
  EXPECT_NE(incident.find("60 keys moved +8.0% (median) at one run; torch 2.9 -&gt; 2.10"),
            std::string::npos)
      << incident;
  EXPECT_NE(std::string(p["attachments"][3]["blocks"][0]["text"]["text"]).find("Resolved"),
            std::string::npos);
  // Colour by severity: regression, improvement, environment and resolved all differ.
  std::set<std::string> colours;
  for (const auto& a : p["attachments"]) colours.insert(a["color"]);
  EXPECT_EQ(colours.size(), 4u);
  const std::string context = p["attachments"][0]["blocks"][1]["elements"][0]["text"];
  // Links name the short id the API and the dashboard use.
  EXPECT_NE(context.find("<https://kw.example.org/alerts/" + core::AlertId("alert-0").short_form() +
                         "|status page>"),
            std::string::npos)
      << context;
}

TEST(SlackPayload, NoLinksWithoutAPublicUrl) {
  const json p = slack_payload(sample_notification("k", 1), {});
  EXPECT_EQ(p.dump().find("status page"), std::string::npos);
}

TEST(SlackPayload, StaysWithinSlackLimitsForHugeGroups) {
  Notification n = sample_notification("big", 200);
  n.alerts[0].alert.attribution = {{"implementation.version", "", std::string(10'000, 'x')}};
  n.host = std::string(500, 'h');
  const json p = slack_payload(n, {"https://kw.example.org", std::chrono::hours(1)});
  EXPECT_EQ(testing::slack_limit_violations(p.dump()), "");
  EXPECT_EQ(p["attachments"].size(), kSlackMaxAlertsShown);
  EXPECT_NE(p.dump().find("and 180 more alerts"), std::string::npos);
}

TEST(SlackPayload, TruncatesOnUtf8Boundaries) {
  Notification n = sample_notification("utf8", 1);
  std::string snow;
  for (int i = 0; i < 2000; ++i) snow += "\xE2\x98\x83";  // U+2603, 3 bytes
  n.alerts[0].alert.attribution = {{"implementation.version", "", snow}};
  const json p = slack_payload(n, {});
  const std::string body = p["attachments"][0]["blocks"][0]["text"]["text"];
  EXPECT_LE(body.size(), kSlackMaxSectionText);
  EXPECT_NO_THROW((void)json(body).dump());  // dump throws on invalid UTF-8
}

TEST(AlertmanagerPayload, LabelsFromTheKeyAnnotationsFromTheVerdict) {
  Notification n = sample_notification("am-1", 0);
  n.alerts.push_back(sample_alert(0));
  n.alerts.push_back(sample_alert(1, Notice::Resolved));
  FormatOptions options;
  options.public_url = "https://kw.example.org";
  options.firing_ttl = std::chrono::hours(2);
  const json p = alertmanager_payload(n, options);
  ASSERT_TRUE(p.is_array());
  ASSERT_EQ(p.size(), 2u);
  const json& firing = p[0];
  EXPECT_EQ(firing["labels"]["alertname"], "KernelwatchRegression");
  EXPECT_EQ(firing["labels"]["benchmark"], "layer_norm/backward");
  EXPECT_EQ(firing["labels"]["provider"], "liger");
  EXPECT_EQ(firing["labels"]["workload"], "hidden1024-rows4096-fp32");
  EXPECT_EQ(firing["labels"]["environment"], "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(firing["labels"]["instance"], "gpu-host-1");
  EXPECT_EQ(firing["labels"]["severity"], "critical");
  EXPECT_EQ(firing["annotations"]["attribution"], "implementation version changed 0.6.1 -> 0.6.2");
  EXPECT_EQ(firing["annotations"]["median_ns"], "1234000");
  EXPECT_EQ(firing["startsAt"], "2025-07-17T18:18:16.000Z");
  EXPECT_EQ(firing["endsAt"], "2025-07-17T20:19:16.000Z");
  EXPECT_EQ(firing["generatorURL"],
            "https://kw.example.org/alerts/" + core::AlertId("alert-0").short_form());
  for (const auto& [name, value] : firing["labels"].items()) EXPECT_TRUE(value.is_string()) << name;
  for (const auto& [name, value] : firing["annotations"].items()) {
    EXPECT_TRUE(value.is_string()) << name;
  }
  const json& resolved = p[1];
  EXPECT_EQ(resolved["endsAt"], "2025-07-17T18:18:16.000Z");
  EXPECT_FALSE(resolved.contains("startsAt"));
  EXPECT_FALSE(alertmanager_payload(n, {})[0].contains("generatorURL"));
}

// A notification of one alert about where runs ran (a GPU or a host out of line), no key.
Notification unit_notification(const std::string& idempotency_key, core::Placement placement) {
  Notification n = sample_notification(idempotency_key, 0);
  n.alerts.push_back(sample_alert(0, Notice::Firing, AlertKind::Environment));
  n.alerts[0].alert.key = core::KeyLabels{"", "", "", "nvidia-h100-80gb-hbm3", "", ""};
  n.alerts[0].alert.placement = std::move(placement);
  return n;
}

// A GPU out of line with its siblings (issue #27): its own alert name and the GPU under
// dcgm-exporter's label names, so Alertmanager and Prometheus match it with DCGM's series.
TEST(AlertmanagerPayload, AGpuOutOfLineCarriesDcgmExportersGpuLabels) {
  Notification n =
      unit_notification("am-1", core::Placement{"h100-a", "3", "GPU-8c3a0f2e", "00000000:4B:00.0"});
  core::Alert& a = n.alerts[0].alert;
  a.explanation = "GPU 3 (UUID GPU-8c3a0f2e) of host h100-a is 12.0% slower than its 7 siblings";
  const json labels = alertmanager_payload(n, {})[0]["labels"];
  EXPECT_EQ(labels["alertname"], "KernelwatchGpuOutlier");
  EXPECT_EQ(labels["Hostname"], "h100-a");
  EXPECT_EQ(labels["gpu"], "3");
  EXPECT_EQ(labels["UUID"], "GPU-8c3a0f2e");
  EXPECT_EQ(labels["pci_bus_id"], "00000000:4B:00.0");
  EXPECT_FALSE(labels.contains("benchmark"));
  EXPECT_EQ(alertmanager_payload(n, {})[0]["annotations"]["summary"], a.explanation);
  a.placement = core::Placement{"h100-c", "", "", ""};
  EXPECT_EQ(alertmanager_payload(n, {})[0]["labels"]["alertname"], "KernelwatchHostOutlier");
}

// The same GPU alert through a webhook and Slack: the webhook says which GPU in `placement`
// (the run labels' names), Slack names it where a key alert names its benchmark; a key alert
// has no `placement`.
TEST(WebhookAndSlackPayload, AGpuOutOfLineIsNamedByItsHostAndGpu) {
  Notification n = sample_notification("gpu-1", 0);
  n.alerts.push_back(sample_alert(0, Notice::Firing, AlertKind::Environment));
  n.alerts.push_back(sample_alert(1));
  core::Alert& a = n.alerts[0].alert;
  a.key = core::KeyLabels{"", "", "", "nvidia-h100-80gb-hbm3", "", ""};
  a.placement = core::Placement{"h100-a", "3", "GPU-8c3a0f2e", "00000000:4B:00.0"};
  a.explanation = "GPU 3 (UUID GPU-8c3a0f2e) of host h100-a is 12.0% slower than its 7 siblings";
  const json hook = webhook_payload(n);
  ASSERT_TRUE(hook["alerts"][0].contains("placement")) << hook.dump();
  const json where = hook["alerts"][0]["placement"];
  EXPECT_EQ(where["host"], "h100-a");
  EXPECT_EQ(where["gpuIndex"], "3");
  EXPECT_EQ(where["gpuUuid"], "GPU-8c3a0f2e");
  EXPECT_EQ(where["pciBusId"], "00000000:4B:00.0");
  EXPECT_FALSE(hook["alerts"][1].contains("placement"));
  const std::string slack = slack_payload(n, {}).dump();
  EXPECT_NE(slack.find("GPU 3 (UUID GPU-8c3a0f2e) of host h100-a"), std::string::npos) << slack;
  EXPECT_EQ(slack.find(" ·  · "), std::string::npos) << "an empty key printed: " << slack;
  a.placement = core::Placement{"h100-c", "", "", ""};
  EXPECT_EQ(webhook_payload(n)["alerts"][0]["placement"], json({{"host", "h100-c"}}));
}

// A host out of line with its fleet (storage.fleet_controls) is an incident that names its host:
// Alertmanager gets the host alert's name and the host, Slack the host and its member keys.
TEST(AlertmanagerAndSlackPayload, AHostOutOfLineWithItsFleetIsAHostAlertThatListsItsKeys) {
  Notification n = unit_notification("fleet-1", core::Placement{"host_d", "", "", ""});
  core::Alert& a = n.alerts[0].alert;
  for (int k = 0; k < 2; ++k) {
    core::Alert member = sample_alert(k).alert;
    member.incident = a.id;
    a.members.push_back(member);
  }
  a.incident = a.id;
  const json labels = alertmanager_payload(n, {})[0]["labels"];
  EXPECT_EQ(labels["alertname"], "KernelwatchHostOutlier");
  EXPECT_EQ(labels["Hostname"], "host_d");
  const std::string slack = slack_payload(n, {}).dump();
  EXPECT_NE(slack.find("host host_d · nvidia-h100-80gb-hbm3: 2 keys: "), std::string::npos)
      << slack;
}

// Alertmanager identifies an alert by its labels: the resolve of an alert carries exactly the
// labels its firing carried, for every kind and direction, or it resolves nothing.
TEST(AlertmanagerPayload, AnAlertsLabelsNeverChangeBetweenFiringAndResolve) {
  for (const auto kind :
       {AlertKind::Step, AlertKind::Drift, AlertKind::Environment, AlertKind::Failed}) {
    for (const auto direction : {Direction::Regression, Direction::Improvement}) {
      Notification firing = sample_notification("am-f", 0);
      firing.alerts.push_back(sample_alert(0));
      firing.alerts[0].alert.kind = kind;
      firing.alerts[0].alert.direction = direction;
      Notification resolve = firing;
      resolve.idempotency_key = "am-r";
      resolve.alerts[0].notice = Notice::Resolved;
      resolve.alerts[0].alert.state = core::AlertState::Resolved;
      const json a = alertmanager_payload(firing, {})[0];
      const json b = alertmanager_payload(resolve, {})[0];
      SCOPED_TRACE(std::string(to_string(kind)) + " " + std::string(to_string(direction)));
      EXPECT_EQ(a["labels"], b["labels"]);
    }
  }
}

// A re-send of an acknowledged alert keeps it active in Alertmanager with the very labels it
// fired with (an annotation says it is acknowledged), and endsAt counts from the sending time,
// so a notification delivered late is not already expired.
TEST(AlertmanagerPayload, AnAcknowledgedAlertStaysActiveWithTheSameLabels) {
  Notification firing = sample_notification("am-f", 0);
  firing.alerts.push_back(sample_alert(0));
  Notification acked = firing;
  acked.idempotency_key = "am-resend";
  acked.alerts[0].alert.state = core::AlertState::Acknowledged;
  FormatOptions options;
  options.firing_ttl = std::chrono::seconds(240);
  const auto sent_at = firing.created_at + std::chrono::hours(3);
  const json a = alertmanager_payload(firing, options)[0];
  const json b = alertmanager_payload(acked, options, sent_at)[0];
  EXPECT_EQ(a["labels"], b["labels"]);
  EXPECT_FALSE(a["annotations"].contains("acknowledged"));
  EXPECT_EQ(b["annotations"]["acknowledged"], "true");
  EXPECT_EQ(b["annotations"]["kernelwatch_id"], core::AlertId("alert-0").short_form());
  EXPECT_EQ(b["startsAt"], a["startsAt"]);
  EXPECT_EQ(b["endsAt"], core::format_timestamp(sent_at + std::chrono::seconds(240)));
  EXPECT_EQ(a["endsAt"], core::format_timestamp(firing.created_at + std::chrono::seconds(240)));
}

}  // namespace
}  // namespace kernelwatch::notifiers
