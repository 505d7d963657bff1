// Pure payload formatting: a Notification as a Slack Block Kit message, a signed generic webhook
// body (schema in docs/NOTIFICATIONS.md) or an Alertmanager API v2 alert array, plus the headers
// each request carries. nlohmann/json only; HMAC through OpenSSL inside payloads.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "notifiers/destination.hpp"
#include "notifiers/notification.hpp"

namespace kernelwatch::notifiers {

inline constexpr int kWebhookSchemaVersion = 1;

// Slack's documented limits for one message.
inline constexpr std::size_t kSlackMaxBlocks = 50;
inline constexpr std::size_t kSlackMaxSectionText = 3000;
inline constexpr std::size_t kSlackMaxHeaderText = 150;
// Alerts shown one by one; the rest are summarised in one line (2 blocks per alert + 3 others).
inline constexpr std::size_t kSlackMaxAlertsShown = 20;

struct FormatOptions {
  std::string public_url;  // status page base ("https://kw.example.org"); "" for no links
  // Alertmanager endsAt for a firing alert, counted from the time of sending: it stays active
  // this long unless re-sent. The worker sets it per destination to 4 x its resend_interval.
  std::chrono::seconds firing_ttl{std::chrono::hours(24)};
};

[[nodiscard]] nlohmann::json slack_payload(const Notification& n, const FormatOptions& options);
[[nodiscard]] nlohmann::json webhook_payload(const Notification& n);
// A firing alert's endsAt is `sent_at` (default: the notification's created_at) + firing_ttl;
// an acknowledged one stays active (annotation `acknowledged`: "true"; labels never change).
[[nodiscard]] nlohmann::json alertmanager_payload(
    const Notification& n, const FormatOptions& options,
    std::optional<core::Timestamp> sent_at = std::nullopt);

// "sha256=<hex>" of HMAC-SHA256(secret, timestamp + "." + body).
[[nodiscard]] std::string webhook_signature(std::string_view secret, std::string_view timestamp,
                                            std::string_view body);

enum class SignatureCheck { Valid, Missing, Mismatch, Stale };
// What a receiver does: recompute in constant time, and refuse timestamps further than
// `tolerance` from `now` (replays).
[[nodiscard]] SignatureCheck verify_webhook_signature(std::string_view secret,
                                                      std::string_view timestamp_header,
                                                      std::string_view signature_header,
                                                      std::string_view body, core::Timestamp now,
                                                      std::chrono::seconds tolerance);

struct OutgoingRequest {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Body and headers for one destination: Content-Type, User-Agent, Idempotency-Key, and for a
// webhook with a secret X-Kernelwatch-Timestamp / X-Kernelwatch-Signature signed at `now`.
[[nodiscard]] OutgoingRequest build_request(const Destination& destination, const Notification& n,
                                            const FormatOptions& options, core::Timestamp now);

// "+5.2%", "-0.8%".
[[nodiscard]] std::string format_change(double relative_change);

}  // namespace kernelwatch::notifiers
