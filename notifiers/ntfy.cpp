// ntfy (https://ntfy.sh or a self-hosted server): the destination's URL is its topic's
// (https://ntfy.sh/TOPIC); each notification is published as JSON to the server's root (the
// URL's path without the topic) with the topic, a title, a message of its alerts, a priority
// and emoji tags. A `secret` is the access token of a protected topic (Authorization: Bearer).
#include <algorithm>
#include <cctype>

#include "notifiers/alert_text.hpp"
#include "notifiers/integration.hpp"

namespace kernelwatch::notifiers {
namespace {

using nlohmann::json;

// ntfy's defaults: a message of at most 4096 bytes; titles are shown on one line.
constexpr std::size_t kNtfyMaxMessage = 4000;
constexpr std::size_t kNtfyMaxTitle = 250;
constexpr std::size_t kNtfyAlertsShown = 10;

// The topic is the URL path's last segment: [-_A-Za-z0-9]{1,64}, as ntfy accepts it.
struct Topic {
  std::string root;  // the path before it, ending in '/'
  std::string name;
};

std::optional<Topic> topic_of(std::string_view target) {
  if (target.find_first_of("?#") != std::string_view::npos) return std::nullopt;
  while (target.size() > 1 && target.back() == '/') target.remove_suffix(1);
  const std::size_t slash = target.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view name = target.substr(slash + 1);
  const bool valid =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
      });
  if (!valid) return std::nullopt;
  return Topic{std::string(target.substr(0, slash + 1)), std::string(name)};
}

// 1 min .. 5 max: a regression or a failed run that fires is high, an incident default, news
// of the good kind (improvements, resolves) low.
int priority_of(const NotifiedAlert& n) {
  if (resolved(n)) return 2;
  const std::string severity = alert_severity(n.alert);
  if (severity == "critical") return 4;
  if (severity == "warning") return 3;
  return 2;
}

// Tag names ntfy shows as emoji.
std::string tag_of(const NotifiedAlert& n) {
  if (resolved(n)) return "white_check_mark";
  const std::string severity = alert_severity(n.alert);
  if (severity == "critical") return "rotating_light";
  if (severity == "warning") return "warning";
  return "information_source";
}

json ntfy_payload(const Topic& topic, const Notification& n, const FormatOptions& options) {
  const std::string host = n.host.empty() ? std::string("kernelwatch") : n.host;
  int priority = 1;
  json tags = json::array();
  std::string message;
  const std::size_t shown = std::min(n.alerts.size(), kNtfyAlertsShown);
  for (std::size_t i = 0; i < n.alerts.size(); ++i) {
    const NotifiedAlert& item = n.alerts[i];
    priority = std::max(priority, priority_of(item));
    const std::string tag = tag_of(item);
    if (std::find(tags.begin(), tags.end(), tag) == tags.end()) tags.push_back(tag);
    if (i >= shown) continue;
    const core::Alert& a = item.alert;
    if (!message.empty()) message += "\n\n";
    message += headline(item) + ": " + key_line(a) + "\nmedian " +
               core::format_latency(item.run().median) + " (" + format_change(a.relative_change) +
               "), band " + band_text(a) + " from " + std::to_string(a.baseline_runs) + " runs";
    if (a.kind == AlertKind::Environment && !resolved(item)) message += "\n" + a.explanation;
    if (const auto text = alert_note(a); !text.empty()) message += "\n" + text;
  }
  if (n.alerts.size() > shown) {
    message += "\n\n…and " + std::to_string(n.alerts.size() - shown) + " more";
  }
  tags.push_back("kernelwatch");
  json payload = {
      {"topic", topic.name},
      {"title", truncate_utf8("kernelwatch on " + host + ": " + summary_line(n), kNtfyMaxTitle)},
      {"message", truncate_utf8(message.empty() ? summary_line(n) : message, kNtfyMaxMessage)},
      {"priority", priority},
      {"tags", std::move(tags)}};
  // A tap opens the alert's page (one alert) or the status page.
  if (n.alerts.size() == 1 && !alert_link(options, n.alerts.front()).empty()) {
    payload["click"] = alert_link(options, n.alerts.front());
  } else if (!options.public_url.empty()) {
    payload["click"] = trim_slash(options.public_url);
  }
  return payload;
}

class NtfyIntegration final : public Integration {
 public:
  std::string_view name() const noexcept override { return "ntfy"; }
  IntegrationTraits traits() const noexcept override {
    IntegrationTraits t;
    t.takes_secret = true;
    t.secret_use = "an access token";
    return t;
  }
  core::Status check(const Destination& destination, std::string_view where) const override {
    const core::Url url = KW_TRY(core::parse_url(destination.url));
    if (!topic_of(url.target)) {
      return core::fail(core::ErrorCode::InvalidArgument,
                        std::string(where) +
                            ": an ntfy url is its topic's, https://HOST/TOPIC (the topic of "
                            "letters, digits, - and _, at most 64, no query)");
    }
    return {};
  }
  // JSON is published to the server's root; the topic goes in the body.
  core::Url endpoint(core::Url url) const override {
    if (const auto topic = topic_of(url.target)) url.target = topic->root;
    return url;
  }
  void write(const Destination& destination, const Notification& n, const FormatOptions& options,
             core::Timestamp, OutgoingRequest& request) const override {
    const auto url = core::parse_url(destination.url);
    const auto topic = url ? topic_of(url->target) : std::nullopt;
    KW_ASSERT(topic.has_value(), "validate() checked the ntfy topic");
    request.body = ntfy_payload(*topic, n, options).dump();
    if (!destination.secret.empty()) {
      request.headers.emplace_back("Authorization", "Bearer " + destination.secret);
    }
  }
};

}  // namespace

const Integration& ntfy_integration() {
  static const NtfyIntegration integration;
  return integration;
}

}  // namespace kernelwatch::notifiers
