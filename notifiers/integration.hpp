// What a receiver type does its own way, behind one interface: the request body and its own
// headers, where a configured URL posts, which answers are permanent, and what a destination of
// the type may configure. Each type is one file (slack.cpp, webhook.cpp, alertmanager.cpp,
// ntfy.cpp) and one line of KW_RECEIVER_TYPES below; nothing else in kernelwatch names a type.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/time.hpp"
#include "core/url.hpp"
#include "notifiers/destination.hpp"
#include "notifiers/notification.hpp"
#include "notifiers/payloads.hpp"

namespace kernelwatch::notifiers {

// What a destination of a type may configure beyond url, timeouts, min_interval and backoff.
struct IntegrationTraits {
  // `secret` / `secret_file` / `secret_env` (a webhook's signing key, ntfy's access token) and
  // what it is called in messages.
  bool takes_secret = false;
  std::string_view secret_use;
  // Open alerts already announced firing are re-sent every `resend_interval`, with an expiry
  // `kAlertmanagerTtlIntervals` intervals ahead (FormatOptions::firing_ttl).
  bool resends = false;
  // `urls`: the peers of a cluster, each a destination of its own.
  bool clusters = false;
  // The gap between two requests when min_interval is not set (Slack: 1 s per webhook).
  std::chrono::milliseconds min_interval{0};
};

class Integration {
 public:
  virtual ~Integration() = default;
  // The config's `type` ("slack").
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual IntegrationTraits traits() const noexcept = 0;
  // Checks of the type's own (ntfy: a topic in the URL); errors name `where`, never the URL.
  [[nodiscard]] virtual core::Status check(const Destination& destination,
                                           std::string_view where) const;
  // Where the destination's requests go: the configured URL, or the type's rewrite of it
  // (Alertmanager's base URL posts to /api/v2/alerts).
  [[nodiscard]] virtual core::Url endpoint(core::Url url) const;
  // The body, and the type's own headers (signature, authorization), of one notification at
  // `now`; build_request() adds the headers every request carries.
  virtual void write(const Destination& destination, const Notification& n,
                     const FormatOptions& options, core::Timestamp now,
                     OutgoingRequest& request) const = 0;
  // An answer body that is permanent whatever its status (Slack's error tokens): the words to
  // add to the reason, "" when it is not one.
  [[nodiscard]] virtual std::string permanent_body(std::string_view body) const;
  // For a permanent status: a hint at the usual cause, "" when none.
  [[nodiscard]] virtual std::string permanent_hint(unsigned status) const;

 protected:
  Integration() = default;
  Integration(const Integration&) = default;
  Integration& operator=(const Integration&) = default;
};

// The registered integrations, in registration order.
[[nodiscard]] const std::vector<const Integration*>& integrations();
// The integration of a type name; nullptr when none is registered under it.
[[nodiscard]] const Integration* find_integration(std::string_view name) noexcept;
// The integration of a name known to be registered (a destination validate() accepted, a test).
[[nodiscard]] const Integration& integration_named(std::string_view name);
[[nodiscard]] const Integration& integration_of(const Destination& destination);
// A registered type name, or an error listing the registered ones.
[[nodiscard]] core::Result<std::string> parse_destination_type(std::string_view text);
// "webhook or ntfy": the types with a trait, for messages.
[[nodiscard]] std::string types_with(bool IntegrationTraits::*trait);

// The receiver types, one line each, in the order they are listed: X(name) is the integration
// `name_integration()` defined in notifiers/<name>.cpp. A new type is its file and its line here.
#define KW_RECEIVER_TYPES(X) \
  X(slack)                   \
  X(webhook)                 \
  X(alertmanager)            \
  X(ntfy)

#define KW_DECLARE_INTEGRATION(type) [[nodiscard]] const Integration& type##_integration();
KW_RECEIVER_TYPES(KW_DECLARE_INTEGRATION)
#undef KW_DECLARE_INTEGRATION

}  // namespace kernelwatch::notifiers
