#include "notifiers/payloads.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace kernelwatch::notifiers {
namespace {

using nlohmann::json;

// Slack mrkdwn needs &, < and > escaped; everything else is literal.
std::string slack_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Cuts at a UTF-8 boundary and marks the cut, so the result is at most `limit` bytes (Slack
// counts characters, which are never more than bytes).
std::string truncate(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  const std::string_view ellipsis = "…";
  std::size_t cut = limit - ellipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  text += ellipsis;
  return text;
}

std::string trim_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string alert_link(const FormatOptions& options, const NotifiedAlert& n) {
  if (options.public_url.empty()) return {};
  return trim_slash(options.public_url) + "/alerts/" + core::short_alert_id(n.alert.id);
}

bool resolved(const NotifiedAlert& n) {
  return n.notice == Notice::Resolved;
}

// What explains the change: the attribution, or for a failed run its reason.
std::string note(const core::Alert& a) {
  if (a.kind == AlertKind::Failed) return a.explanation;
  return a.attribution.empty() ? std::string() : core::describe(a.attribution);
}

// What kind of event this is, in words people scan for.
std::string headline(const NotifiedAlert& n) {
  const core::Alert& a = n.alert;
  if (resolved(n)) return "Resolved";
  switch (a.kind) {
    case AlertKind::Environment:
      return "Incident";
    case AlertKind::Failed:
      return "Failed run";
    case AlertKind::Drift:
      return a.direction == Direction::Regression ? "Regression (drift)" : "Improvement (drift)";
    case AlertKind::Step:
      break;
  }
  return a.direction == Direction::Regression ? "Regression (kernel step)"
                                              : "Improvement (kernel step)";
}

// The severity of the alert itself, whatever this notice says of it: Alertmanager identifies an
// alert by its label set, so a label that changed at the resolve would resolve a different alert
// (and leave the firing one active until it expired).
std::string alert_severity(const core::Alert& a) {
  if (a.kind == AlertKind::Environment) return "warning";
  if (a.kind == AlertKind::Failed) return "critical";
  return a.direction == Direction::Regression ? "critical" : "info";
}

// The severity of this notice (Slack, webhook): a resolve is news of the good kind.
std::string severity(const NotifiedAlert& n) {
  return resolved(n) ? "info" : alert_severity(n.alert);
}

std::string colour(const NotifiedAlert& n) {
  const core::Alert& a = n.alert;
  if (resolved(n)) return "#2eb67d";
  if (a.kind == AlertKind::Environment) return "#ecb22e";
  if (a.kind == AlertKind::Failed) return "#7a0019";
  return a.direction == Direction::Regression ? "#e01e5a" : "#36c5f0";
}

std::string emoji(const NotifiedAlert& n) {
  const core::Alert& a = n.alert;
  if (resolved(n)) return ":white_check_mark:";
  if (a.kind == AlertKind::Environment) return ":warning:";
  if (a.kind == AlertKind::Failed) return ":x:";
  return a.direction == Direction::Regression ? ":red_circle:" : ":large_blue_circle:";
}

// An incident names its environment and its member keys; an alert its key.
std::string key_line(const core::Alert& a) {
  // A GPU or a host out of line with its siblings has no key: where it ran is what it is about.
  if (!a.placement.empty() && a.key.benchmark.empty()) {
    return a.placement.describe() + " · " + a.key.environment;
  }
  if (a.members.empty()) {
    const auto& k = a.key;
    return k.benchmark + " · " + k.provider + " · " + k.workload + " · " + k.environment;
  }
  std::string line = a.key.environment + ": " + std::to_string(a.members.size()) + " keys";
  constexpr std::size_t kNamed = 5;
  for (std::size_t i = 0; i < a.members.size() && i < kNamed; ++i) {
    const auto& k = a.members[i].key;
    line += (i == 0 ? ": " : ", ") + k.benchmark + " " + k.provider + " " + k.workload;
  }
  if (a.members.size() > kNamed) line += ", …";
  return line;
}

std::string summary_line(const Notification& n) {
  std::size_t regressions = 0, improvements = 0, environment = 0, failed = 0, resolved_count = 0;
  for (const auto& item : n.alerts) {
    const core::Alert& a = item.alert;
    if (resolved(item)) {
      ++resolved_count;
    } else if (a.kind == AlertKind::Environment) {
      ++environment;
    } else if (a.kind == AlertKind::Failed) {
      ++failed;
    } else if (a.direction == Direction::Regression) {
      ++regressions;
    } else {
      ++improvements;
    }
  }
  std::string out;
  auto add = [&](std::size_t count, const char* one, const char* many) {
    if (count == 0) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(count) + " " + (count == 1 ? one : many);
  };
  add(regressions, "regression", "regressions");
  add(environment, "incident", "incidents");
  add(failed, "failed run", "failed runs");
  add(improvements, "improvement", "improvements");
  add(resolved_count, "resolved", "resolved");
  if (out.empty()) out = "no alerts";
  return out;
}

std::string band_text(const core::Alert& a) {
  return core::format_latency(a.band.lower) + " – " + core::format_latency(a.band.upper);
}

std::string to_hex(const unsigned char* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 0x0f];
  }
  return out;
}

// An environment incident's member keys, each with the move it showed.
json members_json(const core::Alert& a) {
  json members = json::array();
  for (const auto& m : a.members) {
    members.push_back({{"key",
                        {{"benchmark", m.key.benchmark},
                         {"provider", m.key.provider},
                         {"workload", m.key.workload},
                         {"environment", m.key.environment}}},
                       {"medianNs", m.fired.median.count()},
                       {"relativeChange", m.relative_change},
                       {"externalId", m.fired.external_id},
                       {"explanation", m.explanation}});
  }
  return members;
}

json alert_json(const NotifiedAlert& n) {
  const core::Alert& a = n.alert;
  json alert{{"id", a.id},
             {"state", core::to_string(n.notice)},
             {"kind", to_string(a.kind)},
             {"direction", to_string(a.direction)},
             {"severity", severity(n)},
             {"key",
              {{"benchmark", a.key.benchmark},
               {"provider", a.key.provider},
               {"workload", a.key.workload},
               {"environment", a.key.environment}}},
             {"medianNs", n.run().median.count()},
             {"band", {{"lowerNs", a.band.lower.count()}, {"upperNs", a.band.upper.count()}}},
             {"relativeChange", a.relative_change},
             {"baselineRuns", a.baseline_runs},
             {"attribution", note(a)},
             {"externalId", n.run().external_id},
             {"observedAt", core::format_timestamp(n.run().observed_at)},
             {"members", members_json(a)}};
  // A GPU or host alert says which one, under the run labels' names (docs/NOTIFICATIONS.md).
  if (!a.placement.empty()) {
    json where = json::object();
    for (const auto& [name, value] : {std::pair{"host", &a.placement.host},
                                      {"gpuIndex", &a.placement.gpu},
                                      {"gpuUuid", &a.placement.gpu_uuid},
                                      {"pciBusId", &a.placement.pci_bus_id}}) {
      if (!value->empty()) where[name] = *value;
    }
    alert["placement"] = std::move(where);
  }
  return alert;
}

}  // namespace

std::string format_change(double relative_change) {
  return core::format_change(relative_change);
}

json slack_payload(const Notification& n, const FormatOptions& options) {
  const std::string host = n.host.empty() ? std::string("kernelwatch") : n.host;
  const std::string summary = summary_line(n);

  // Fallback text (notifications, screen readers): the summary and the first keys.
  std::string text = "kernelwatch on " + host + ": " + summary;
  for (std::size_t i = 0; i < n.alerts.size() && i < 5; ++i) {
    const auto& item = n.alerts[i];
    text += "\n" + headline(item) + ": " + item.alert.key.benchmark + " " +
            item.alert.key.provider + " " + core::format_latency(item.run().median) + " (" +
            format_change(item.alert.relative_change) + ")";
  }
  if (n.alerts.size() > 5) text += "\n…and " + std::to_string(n.alerts.size() - 5) + " more";

  json blocks = json::array();
  blocks.push_back(
      {{"type", "header"},
       {"text",
        {{"type", "plain_text"},
         {"text", truncate("kernelwatch on " + host + ": " + summary, kSlackMaxHeaderText)}}}});

  json attachments = json::array();
  const std::size_t shown = std::min(n.alerts.size(), kSlackMaxAlertsShown);
  for (std::size_t i = 0; i < shown; ++i) {
    const NotifiedAlert& item = n.alerts[i];
    const core::Alert& a = item.alert;
    std::string body = emoji(item) + " *" + headline(item) + "*  `" +
                       slack_escape(!a.members.empty()         ? a.key.environment
                                    : !a.key.benchmark.empty() ? a.key.benchmark
                                                               : a.placement.describe()) +
                       "`\n" + slack_escape(key_line(a)) + "\n";
    if (a.kind == AlertKind::Environment && !resolved(item)) {
      // What moved and what changed at that run, in the incident's own words (it never calls a
      // move of subjects alone an environment change).
      body += slack_escape(a.explanation) + "\n";
    }
    body += "New median *" + core::format_latency(item.run().median) + "* (" +
            format_change(a.relative_change) + ") · band " + band_text(a) + " from " +
            std::to_string(a.baseline_runs) + " runs";
    if (const auto text = note(a); !text.empty()) body += "\nAttribution: " + slack_escape(text);
    std::string context = "run `" + slack_escape(item.run().external_id) + "` observed " +
                          core::format_timestamp(item.run().observed_at);
    if (const auto link = alert_link(options, item); !link.empty()) {
      context += " · <" + link + "|status page>";
    }
    json section = {{"type", "section"},
                    {"text", {{"type", "mrkdwn"}, {"text", truncate(body, kSlackMaxSectionText)}}}};
    json context_block = {
        {"type", "context"},
        {"elements",
         json::array({{{"type", "mrkdwn"}, {"text", truncate(context, kSlackMaxSectionText)}}})}};
    attachments.push_back(
        {{"color", colour(item)}, {"blocks", json::array({section, context_block})}});
  }

  std::string footer = "idempotency key `" + slack_escape(n.idempotency_key) + "`";
  if (n.alerts.size() > shown) {
    footer = "…and " + std::to_string(n.alerts.size() - shown) + " more alerts" +
             (options.public_url.empty()
                  ? std::string()
                  : " on the <" + trim_slash(options.public_url) + "|status page>") +
             " · " + footer;
  }
  blocks.push_back(
      {{"type", "context"},
       {"elements",
        json::array({{{"type", "mrkdwn"}, {"text", truncate(footer, kSlackMaxSectionText)}}})}});

  json payload = {{"text", truncate(text, kSlackMaxSectionText)}, {"blocks", std::move(blocks)}};
  if (!attachments.empty()) payload["attachments"] = std::move(attachments);
  return payload;
}

json webhook_payload(const Notification& n) {
  json alerts = json::array();
  json runs = json::array();
  for (const auto& item : n.alerts) {
    alerts.push_back(alert_json(item));
    if (!item.run_record.is_null()) runs.push_back(item.run_record);
  }
  return json{{"version", kWebhookSchemaVersion},
              {"type", "kernelwatch.alerts"},
              {"idempotencyKey", n.idempotency_key},
              {"createdAt", core::format_timestamp(n.created_at)},
              {"host", n.host},
              {"summary", summary_line(n)},
              {"alerts", std::move(alerts)},
              {"runs", std::move(runs)}};
}

json alertmanager_payload(const Notification& n, const FormatOptions& options,
                          std::optional<core::Timestamp> sent_at) {
  json out = json::array();
  for (const auto& item : n.alerts) {
    const core::Alert& a = item.alert;
    std::string alertname = "KernelwatchRegression";
    const bool unit = !a.placement.empty();  // a GPU or a host out of line with its siblings
    if (unit) {
      alertname = a.placement.unit().empty() ? "KernelwatchHostOutlier" : "KernelwatchGpuOutlier";
    } else if (a.kind == AlertKind::Environment) {
      alertname = "KernelwatchEnvironmentShift";
    } else if (a.kind == AlertKind::Failed) {
      alertname = "KernelwatchFailedRun";
    } else if (a.direction == Direction::Improvement) {
      alertname = "KernelwatchImprovement";
    }
    json labels = {{"alertname", alertname},        {"environment", a.key.environment},
                   {"kind", to_string(a.kind)},     {"direction", to_string(a.direction)},
                   {"severity", alert_severity(a)}, {"alert_id", a.id}};
    // An incident has no benchmark, provider or workload: no empty labels for them.
    for (const auto& [name, value] : {std::pair{"benchmark", a.key.benchmark},
                                      {"provider", a.key.provider},
                                      {"workload", a.key.workload}}) {
      if (!value.empty()) labels[name] = value;
    }
    if (!n.host.empty()) labels["instance"] = n.host;
    // The GPU's identity under dcgm-exporter's label names, so that Alertmanager inhibit rules
    // and Prometheus joins match DCGM's series of the same GPU (docs/FLEET.md).
    for (const auto& [name, value] : {std::pair{"Hostname", unit ? a.placement.host : n.host},
                                      {"gpu", a.placement.gpu},
                                      {"UUID", a.placement.gpu_uuid},
                                      {"pci_bus_id", a.placement.pci_bus_id}}) {
      if (!value.empty()) labels[name] = value;
    }
    json annotations = {
        {"summary", unit ? a.explanation
                         : headline(item) + ": " + a.key.benchmark + " " + a.key.provider + " " +
                               format_change(a.relative_change)},
        {"description", "median " + core::format_latency(item.run().median) + " (" +
                            format_change(a.relative_change) + "), band " + band_text(a) +
                            " from " + std::to_string(a.baseline_runs) + " runs"},
        {"median_ns", std::to_string(item.run().median.count())},
        {"band_lower_ns", std::to_string(a.band.lower.count())},
        {"band_upper_ns", std::to_string(a.band.upper.count())},
        {"relative_change", format_change(a.relative_change)},
        {"external_id", item.run().external_id},
        {"idempotency_key", n.idempotency_key}};
    if (const auto text = note(a); !text.empty()) annotations["attribution"] = text;
    annotations["kernelwatch_id"] = core::short_alert_id(a.id);
    if (a.state == core::AlertState::Acknowledged && !resolved(item)) {
      annotations["acknowledged"] = "true";
    }
    json alert = {{"labels", std::move(labels)}, {"annotations", std::move(annotations)}};
    if (resolved(item)) {
      // startsAt is unknown to a resolve message; Alertmanager matches by labels.
      alert["endsAt"] = core::format_timestamp(item.run().observed_at);
    } else {
      alert["startsAt"] = core::format_timestamp(item.run().observed_at);
      alert["endsAt"] = core::format_timestamp(sent_at.value_or(n.created_at) + options.firing_ttl);
    }
    if (const auto link = alert_link(options, item); !link.empty()) alert["generatorURL"] = link;
    out.push_back(std::move(alert));
  }
  return out;
}

std::string webhook_signature(std::string_view secret, std::string_view timestamp,
                              std::string_view body) {
  std::string message;
  message.reserve(timestamp.size() + 1 + body.size());
  message.append(timestamp).append(".").append(body);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  const unsigned char* ok = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                                 reinterpret_cast<const unsigned char*>(message.data()),
                                 message.size(), digest.data(), &size);
  KW_ASSERT(ok != nullptr, "HMAC-SHA256 cannot fail on valid input");
  return "sha256=" + to_hex(digest.data(), size);
}

SignatureCheck verify_webhook_signature(std::string_view secret, std::string_view timestamp_header,
                                        std::string_view signature_header, std::string_view body,
                                        core::Timestamp now, std::chrono::seconds tolerance) {
  if (timestamp_header.empty() || signature_header.empty()) return SignatureCheck::Missing;
  long long seconds = 0;
  auto [end, ec] = std::from_chars(timestamp_header.data(),
                                   timestamp_header.data() + timestamp_header.size(), seconds);
  if (ec != std::errc() || end != timestamp_header.data() + timestamp_header.size()) {
    return SignatureCheck::Mismatch;
  }
  const std::string expected = webhook_signature(secret, timestamp_header, body);
  if (expected.size() != signature_header.size() ||
      CRYPTO_memcmp(expected.data(), signature_header.data(), expected.size()) != 0) {
    return SignatureCheck::Mismatch;
  }
  const auto sent = core::Timestamp(std::chrono::seconds(seconds));
  const auto skew = now > sent ? now - sent : sent - now;
  if (skew > tolerance) return SignatureCheck::Stale;
  return SignatureCheck::Valid;
}

OutgoingRequest build_request(const Destination& destination, const Notification& n,
                              const FormatOptions& options, core::Timestamp now) {
  OutgoingRequest request;
  switch (destination.type) {
    case DestinationType::Slack:
      request.body = slack_payload(n, options).dump();
      break;
    case DestinationType::Webhook:
      request.body = webhook_payload(n).dump();
      break;
    case DestinationType::Alertmanager:
      request.body = alertmanager_payload(n, options, now).dump();
      break;
  }
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("User-Agent", "kernelwatch/0.1");
  request.headers.emplace_back("Idempotency-Key", n.idempotency_key);
  if (destination.type == DestinationType::Webhook && !destination.secret.empty()) {
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    const std::string timestamp = std::to_string(seconds);
    request.headers.emplace_back("X-Kernelwatch-Timestamp", timestamp);
    request.headers.emplace_back("X-Kernelwatch-Signature",
                                 webhook_signature(destination.secret, timestamp, request.body));
  }
  return request;
}

}  // namespace kernelwatch::notifiers
