// Slack: a Block Kit message per notification (header, one coloured attachment per alert, up to
// kSlackMaxAlertsShown, and a footer), 1 s between two requests (Slack's limit per webhook), and
// Slack's error tokens permanent whatever the status.
#include <algorithm>
#include <array>
#include <cctype>

#include "notifiers/alert_text.hpp"
#include "notifiers/integration.hpp"

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

// Answers Slack documents as permanent (retrying cannot help).
constexpr std::array<std::string_view, 8> kSlackPermanent = {
    "invalid_payload",   "no_service",
    "channel_not_found", "channel_is_archived",
    "action_prohibited", "no_active_hooks",
    "invalid_token",     "posting_to_general_channel_denied"};

class SlackIntegration final : public Integration {
 public:
  std::string_view name() const noexcept override { return "slack"; }
  IntegrationTraits traits() const noexcept override {
    IntegrationTraits t;
    t.min_interval = std::chrono::seconds(1);
    return t;
  }
  void write(const Destination&, const Notification& n, const FormatOptions& options,
             core::Timestamp, OutgoingRequest& request) const override {
    request.body = slack_payload(n, options).dump();
  }
  std::string permanent_body(std::string_view body) const override {
    while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front())) != 0) {
      body.remove_prefix(1);
    }
    while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back())) != 0) {
      body.remove_suffix(1);
    }
    for (const auto token : kSlackPermanent) {
      if (body == token) return std::string(token);
    }
    return {};
  }
};

}  // namespace

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
  blocks.push_back({{"type", "header"},
                    {"text",
                     {{"type", "plain_text"},
                      {"text", truncate_utf8("kernelwatch on " + host + ": " + summary,
                                             kSlackMaxHeaderText)}}}});

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
    if (const auto text = alert_note(a); !text.empty())
      body += "\nAttribution: " + slack_escape(text);
    std::string context = "run `" + slack_escape(item.run().external_id) + "` observed " +
                          core::format_timestamp(item.run().observed_at);
    if (const auto link = alert_link(options, item); !link.empty()) {
      context += " · <" + link + "|status page>";
    }
    json section = {
        {"type", "section"},
        {"text", {{"type", "mrkdwn"}, {"text", truncate_utf8(body, kSlackMaxSectionText)}}}};
    json context_block = {
        {"type", "context"},
        {"elements", json::array({{{"type", "mrkdwn"},
                                   {"text", truncate_utf8(context, kSlackMaxSectionText)}}})}};
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
       {"elements", json::array({{{"type", "mrkdwn"},
                                  {"text", truncate_utf8(footer, kSlackMaxSectionText)}}})}});

  json payload = {{"text", truncate_utf8(text, kSlackMaxSectionText)},
                  {"blocks", std::move(blocks)}};
  if (!attachments.empty()) payload["attachments"] = std::move(attachments);
  return payload;
}

const Integration& slack_integration() {
  static const SlackIntegration integration;
  return integration;
}

}  // namespace kernelwatch::notifiers
