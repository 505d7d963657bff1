// Where notifications go: a destination's plain config (the config module parses JSON into it,
// url_file/url_env secrets already resolved), its checks and the redaction every log and error
// uses (URLs are parsed by core::parse_url). Plain C++, no Asio, no OpenSSL.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/url.hpp"

namespace kernelwatch::notifiers {

using core::Result;
using core::Status;

// Plain http:// is refused unless the host is loopback or the config says so explicitly.
enum class InsecureHttp { Refuse, Allow };

struct Timeouts {
  std::chrono::milliseconds resolve{std::chrono::seconds(10)};
  std::chrono::milliseconds connect{std::chrono::seconds(10)};
  std::chrono::milliseconds handshake{std::chrono::seconds(10)};
  std::chrono::milliseconds write{std::chrono::seconds(10)};
  std::chrono::milliseconds read{std::chrono::seconds(10)};
};

// Retry schedule: base * 2^(attempt-1), capped, with jitter in [delay/2, delay]; a notification
// older than max_age is given up (dead letter) instead of retried.
struct Backoff {
  std::chrono::milliseconds base{std::chrono::seconds(2)};
  std::chrono::milliseconds cap{std::chrono::minutes(10)};
  std::chrono::milliseconds max_age{std::chrono::hours(24)};
};

struct Destination {
  // The receiver type: a registered integration's name (notifiers/integration.hpp).
  std::string type = "webhook";
  std::string name;     // stable: outbox rows are keyed by it
  std::string url;      // a secret (Slack webhook URLs are credentials): only redact() it
  std::string secret;   // webhook HMAC key, ntfy access token; "" sends unsigned, anonymous
  std::string ca_file;  // PEM bundle to verify against instead of the system store
  InsecureHttp insecure_http = InsecureHttp::Refuse;
  Timeouts timeouts;
  // Minimum gap between two requests to this destination; nullopt: the integration's (1 s for
  // Slack, its documented limit per webhook; none otherwise).
  std::optional<std::chrono::milliseconds> min_interval;
  Backoff backoff;
  // An integration that re-sends (Alertmanager): every open alert already announced firing is
  // re-sent this often, with endsAt 4 intervals ahead, so Alertmanager never lets it expire
  // (Prometheus does the same on every evaluation). Re-sends are read from the alert table, never
  // queued in the outbox.
  std::chrono::milliseconds resend_interval{std::chrono::minutes(1)};
  // Alertmanager cluster (`urls` in the config): the configured entry's name when this
  // destination is one of its peers ("am" for the peers am/1, am/2, ...), "" otherwise. Each
  // peer is a destination of its own (its own outbox rows, retries and re-sends); the worker
  // only consults the other peers' outcomes (docs/NOTIFICATIONS.md, "Alertmanager cluster").
  std::string cluster;
};

// The destination name of a cluster's peer: "<cluster>/<position>", position from 1 in the
// order of `urls`. A '/' is never in a configured name, so it cannot collide with one.
[[nodiscard]] std::string peer_name(std::string_view cluster, std::size_t position);

// What identifies an Alertmanager: the endpoint its alerts are posted to (scheme, host, port,
// path; a base URL counts as its /api/v2/alerts), so http://am:9093 and
// http://am:9093/api/v2/alerts are the same peer. A secret like the URL: never show it.
[[nodiscard]] Result<std::string> alertmanager_endpoint(std::string_view url);

// Where an Alertmanager destination given by its base URL posts.
inline constexpr std::string_view kAlertmanagerAlertsPath = "/api/v2/alerts";

// How many re-send intervals ahead a firing alert's endsAt lies (Prometheus uses 4 evaluation
// intervals too): three re-sends may be lost before Alertmanager lets the alert expire.
inline constexpr int kAlertmanagerTtlIntervals = 4;

[[nodiscard]] std::chrono::milliseconds effective_min_interval(const Destination& destination);

// scheme://host:port and nothing else (no user info, path, query or fragment); "<invalid url>"
// when it cannot be parsed.
[[nodiscard]] std::string redact(std::string_view url);

// An address in 127.0.0.0/8 or ::1, or "localhost"; not a name that merely starts like one.
[[nodiscard]] bool is_loopback_host(std::string_view host);

// The http:// rule: plain http only to a loopback host, unless the destination allows it.
[[nodiscard]] bool refuses_plain_http(const core::Url& url, InsecureHttp insecure_http);

// Checks the type, the name, the URL, the http:// rule and the integration's own checks; errors
// name the destination and redact the URL.
[[nodiscard]] Status validate(const Destination& destination);

// Log lines: a level and a message that never carries a URL path, query or secret.
enum class LogLevel { Debug, Info, Warning, Error };
using Logger = std::function<void(LogLevel, std::string_view)>;

}  // namespace kernelwatch::notifiers
