// GET /metrics: the daemon's numbers in the Prometheus text format 0.0.4 (runs by status, run
// durations, each key's last median and band, alert states, outbox depth, deliveries by result,
// build info). Composition code over the ApiContext.
#pragma once

#include <string>
#include <string_view>

#include "daemon/api.hpp"
#include "http/prometheus.hpp"

namespace kernelwatch::daemon {

inline constexpr std::string_view kMetricsContentType = http::kPrometheusContentType;

// An error (two samples with one label set, a bad name) is an error, never a 200 with a comment:
// Prometheus counts a 500 as the target being down, and a blank body as "up, no data".
[[nodiscard]] core::Result<std::string> render_metrics(const ApiContext& context);

}  // namespace kernelwatch::daemon
