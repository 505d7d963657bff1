// Durations as config files spell them: "15m", "30s", "1.5h", "250ms", "1d".
// Standard library only; used by the config loader and the CLI.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kernelwatch::config {

// A non-negative number (integer or decimal, up to 9 decimal places) followed at once by one of
// the units ms, s, m, h, d. Rejects "", "15" (no unit), "-1m", "15 min", "1.5ms" (not a whole
// number of milliseconds) and values past the range of std::chrono::milliseconds. The error
// message quotes the text and says what a duration looks like.
[[nodiscard]] core::Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// The largest unit that divides the duration exactly: 90 s -> "90s", 1 h -> "1h", 0 -> "0s",
// 1500 ms -> "1500ms". parse_duration(format_duration(d)) == d for every d >= 0.
[[nodiscard]] std::string format_duration(std::chrono::milliseconds duration);

}  // namespace kernelwatch::config
