// The alert vocabulary the detectors raise, the notifiers send and the daemon stores: what kind
// of change an alert reports and in which direction. Plain C++, no I/O.
#pragma once

#include <string_view>

namespace kernelwatch::core {

// Step: a level change of one key; Drift: a slow trend; Environment: a shift most keys of a
// host (or its reference provider) show too; Failed: runs of the key fail (daemon only).
enum class AlertKind { Step, Drift, Environment, Failed };

// Regression: slower (a larger median); Improvement: faster.
enum class Direction { Regression, Improvement };

[[nodiscard]] std::string_view to_string(AlertKind kind) noexcept;       // "step", ...
[[nodiscard]] std::string_view to_string(Direction direction) noexcept;  // "regression", ...

}  // namespace kernelwatch::core
