// GET /metrics: the daemon's numbers in the Prometheus text format 0.0.4 (runs by status, run
// durations, each key's last median and band, alert states, outbox depth, deliveries by result,
// build info). Composition code over the ApiContext.
#pragma once

#include <string>
#include <string_view>

#include "daemon/api.hpp"
#include "daemon/prometheus.hpp"

namespace kernelwatch::daemon {

inline constexpr std::string_view kMetricsContentType = kPrometheusContentType;

[[nodiscard]] std::string render_metrics(const ApiContext& context);

}  // namespace kernelwatch::daemon
