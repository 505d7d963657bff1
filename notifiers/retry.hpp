// Delivery policy as pure functions: which responses are delivered, retried or dead, the
// exponential backoff with jitter, Retry-After (seconds or HTTP-date) and the maximum age.
// Plain C++; the worker feeds it responses and an injected clock and random generator.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "core/time.hpp"
#include "notifiers/destination.hpp"
#include "notifiers/integration.hpp"

namespace kernelwatch::notifiers {

struct HttpResponse {
  unsigned status = 0;
  std::string body;         // at most the client's body limit
  std::string retry_after;  // the Retry-After header, "" when absent
};

enum class Verdict { Delivered, Transient, Permanent };

struct Classification {
  Verdict verdict = Verdict::Transient;
  std::optional<std::chrono::milliseconds> retry_after;  // from Retry-After, when given
  std::string reason;  // "HTTP 503", "HTTP 404 channel_not_found"; never the URL or the body
};

// 2xx delivered; 408, 429 and 5xx transient; other statuses permanent. A body the integration
// knows as permanent (Slack's error tokens: invalid_payload, no_service, channel_not_found, ...)
// is permanent whatever the status; a permanent status gets the integration's hint.
[[nodiscard]] Classification classify(const Integration& integration, const HttpResponse& response,
                                      core::Timestamp now);

// "120" or "Wed, 21 Oct 2015 07:28:00 GMT" (also RFC 850 and asctime forms); nullopt when
// unparseable. A date in the past gives zero.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                                         core::Timestamp now);
[[nodiscard]] std::optional<core::Timestamp> parse_http_date(std::string_view value);

// Delay before attempt `failed_attempts + 1`: base * 2^(failed_attempts - 1), capped, then a
// uniform draw in [delay/2, delay] ("equal jitter": spread, yet never near zero).
[[nodiscard]] std::chrono::milliseconds backoff_delay(const Backoff& backoff,
                                                      std::int64_t failed_attempts,
                                                      std::mt19937_64& rng);

struct Decision {
  enum class Kind { Delivered, RetryAt, Dead };
  Kind kind = Kind::RetryAt;
  core::Timestamp at{};  // RetryAt: next attempt; otherwise `now`
  std::string message;   // the error (RetryAt) or the dead-letter reason (Dead)
  // false: stopped before the request went out or while it was in flight; nothing to record,
  // the row stays due as it was.
  bool sent = true;
  // Dead only because the next attempt would pass the maximum age (the destination kept
  // failing transiently), not a permanent failure: a cluster peer's row may then count as
  // covered by another peer instead of becoming a dead letter.
  bool gave_up = false;
};

// What to record after a failed or successful attempt. `failed_attempts` counts this one.
// Retry-After wins over the backoff (but never below the base delay); a next attempt past
// created_at + max_age is given up as Dead.
[[nodiscard]] Decision decide(const Backoff& backoff, const Classification& classification,
                              std::int64_t failed_attempts, core::Timestamp created_at,
                              core::Timestamp now, std::mt19937_64& rng);

}  // namespace kernelwatch::notifiers
