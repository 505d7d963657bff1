// What one notification says, independent of where it goes: the alerts one detection cycle
// raised or resolved, grouped, with an idempotency key. Stored as JSON in the outbox row.
// Plain C++ with nlohmann/json; no Asio, no storage.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/alert.hpp"
#include "core/error.hpp"
#include "core/time.hpp"

namespace kernelwatch::notifiers {

enum class AlertState { Firing, Resolved };
using core::AlertKind;  // core/alert.hpp
using core::Direction;
using core::to_string;

[[nodiscard]] std::string_view to_string(AlertState state) noexcept;

// The comparability key's labels (the protocol is implied by the benchmark for alerting).
struct AlertKey {
  std::string benchmark;
  std::string provider;
  std::string workload;
  std::string environment;
};

struct Alert {
  std::string id;  // the alert's stable id (one open alert per key)
  AlertKey key;
  AlertState state = AlertState::Firing;
  AlertKind kind = AlertKind::Step;
  Direction direction = Direction::Regression;
  std::chrono::nanoseconds median{0};      // the new run's median
  std::chrono::nanoseconds band_lower{0};  // the baseline band it left (or re-entered)
  std::chrono::nanoseconds band_upper{0};
  double relative_change = 0;  // (median - baseline centre) / baseline centre; +0.05 = 5% slower
  std::int64_t baseline_runs = 0;
  std::string attribution;  // "implementation changed 0.6.1 -> 0.6.2", "" when none
  std::string external_id;  // the kernelindex run that caused it
  core::Timestamp observed_at{};
  nlohmann::json run_record;  // the kernelindex record, or null when not attached
};

struct Notification {
  std::string idempotency_key;  // stable: e.g. "<host>/<cycle id>"; receivers drop repeats
  core::Timestamp created_at{};
  std::string host;  // the kernelwatch instance (Alertmanager `instance` label)
  std::vector<Alert> alerts;
};

[[nodiscard]] nlohmann::json to_json(const Notification& notification);
[[nodiscard]] core::Result<Notification> notification_from_json(const nlohmann::json& doc);
// The outbox payload form and back.
[[nodiscard]] std::string serialize(const Notification& notification);
[[nodiscard]] core::Result<Notification> parse_notification(std::string_view text);

}  // namespace kernelwatch::notifiers
