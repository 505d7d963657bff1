// Timestamps as UTC nanoseconds since the epoch, with RFC 3339 parsing and formatting, and the
// one readable form of a latency and of a relative change.
// Plain C++ (std::chrono), no I/O, no clock reads.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kernelwatch::core {

using Timestamp = std::chrono::sys_time<std::chrono::nanoseconds>;

// The range of a Timestamp that parse_timestamp accepts: whole years inside what 64-bit
// nanoseconds hold (1677-09-21 to 2262-04-11). Anything outside is refused, never wrapped.
inline constexpr int kFirstYear = 1678;
inline constexpr int kLastYear = 2261;

// How far after the receiver's clock a run's observedAt may be (clock skew between hosts); a run
// dated later is refused.
inline constexpr std::chrono::minutes kFutureTolerance{5};

// Accepts "2025-07-17T18:18:16Z", fractional seconds up to 9 digits, and "+HH:MM" offsets.
[[nodiscard]] Result<Timestamp> parse_timestamp(std::string_view text);

// "YYYY-MM-DD HH:MM:SS" as Liger's CSV writes it; taken as UTC (the CSV carries no zone).
[[nodiscard]] Result<Timestamp> parse_naive_timestamp(std::string_view text);

// "2025-07-17T18:18:16.000Z": milliseconds, or nanoseconds when finer digits are set.
[[nodiscard]] std::string format_timestamp(Timestamp t);

// "2025-07-17-18-18-16", the form kernelindex externalIds end with.
[[nodiscard]] std::string format_id_timestamp(Timestamp t);

// A latency as people read it, four significant digits in ns, us, ms or s: "950 ns",
// "577.6 us", "23.38 ms", "2.500 s". The one form of a median or band in the CLI, the verdict
// explanations and the notifications.
[[nodiscard]] std::string format_latency(double nanoseconds);
[[nodiscard]] inline std::string format_latency(std::chrono::nanoseconds value) {
  return format_latency(static_cast<double>(value.count()));
}

// A relative change as people read it, one decimal: 0.052 -> "+5.2%", -0.14 -> "-14.0%". The one
// form of a change in the CLI, the API's explanations, the dashboard and the notifications.
[[nodiscard]] std::string format_change(double fraction);
// A share or a margin without its sign: 0.052 and -0.052 -> "5.2%".
[[nodiscard]] std::string format_share(double fraction);

}  // namespace kernelwatch::core
