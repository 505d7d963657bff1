// The config file's `metrics` section: which keys get series of their own in /metrics
// (docs/CONFIG.md, "metrics"). Read by config.cpp; level 3, core/ and nlohmann/json only.
#pragma once

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace kernelwatch::config {

// `out` keeps its defaults for absent fields; an unknown field or value is an error naming it.
[[nodiscard]] core::Status read_metrics(const core::JsonField& field, MetricsConfig& out);
// The section as the redacted config shows it.
[[nodiscard]] nlohmann::json metrics_json(const MetricsConfig& metrics);

}  // namespace kernelwatch::config
