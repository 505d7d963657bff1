// Sample notifications for notifier tests and benchmarks (header-only, no I/O).
#pragma once

#include <string>

#include "core/time.hpp"
#include "notifiers/notification.hpp"

namespace kernelwatch::notifiers::testing {

inline core::Timestamp at_seconds(long long seconds) {
  return core::Timestamp(std::chrono::seconds(seconds));
}

// 2025-07-17T18:18:16Z, the founding fixture's observedAt.
inline constexpr long long kEpoch = 1752776296;

inline NotifiedAlert sample_alert(int i, Notice notice = Notice::Firing,
                                  AlertKind kind = AlertKind::Step,
                                  Direction direction = Direction::Regression) {
  NotifiedAlert n;
  core::Alert& a = n.alert;
  a.id = core::AlertId("alert-" + std::to_string(i));
  a.key = {"layer_norm/backward",
           "liger",
           "hidden" + std::to_string(1024 * (i + 1)) + "-rows4096-fp32",
           "nvidia-h100-80gb-hbm3",
           "liger-bench-do-bench-backward",
           ""};
  a.kind = kind;
  a.direction = direction;
  a.fired = {"layer_norm/backward/liger/nvidia-h100-80gb-hbm3/hidden1024/2025-07-17-18-18-16",
             at_seconds(kEpoch), std::chrono::nanoseconds(1'234'000 + i)};
  a.onset = a.fired;
  a.band.lower = std::chrono::nanoseconds(1'100'000);
  a.band.upper = std::chrono::nanoseconds(1'170'000);
  a.relative_change = 0.0812;
  a.baseline_runs = 20;
  a.attribution = {{"implementation.version", "0.6.1", "0.6.2"}};
  n.notice = notice;
  if (notice == Notice::Resolved) {
    a.state = core::AlertState::Resolved;
    a.closed_by = a.fired;
  }
  n.run_record = nlohmann::json{{"apiVersion", "kernelindex.dev/v1alpha1"},
                                {"kind", "BenchmarkRun"},
                                {"metadata", {{"name", a.fired.external_id}}}};
  return n;
}

inline Notification sample_notification(const std::string& key, int alerts = 2) {
  Notification n;
  n.idempotency_key = key;
  n.created_at = at_seconds(kEpoch + 60);
  n.host = "gpu-host-1";
  for (int i = 0; i < alerts; ++i) n.alerts.push_back(sample_alert(i));
  return n;
}

}  // namespace kernelwatch::notifiers::testing
