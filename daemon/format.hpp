// Text helpers for the CLI: durations in readable units and fixed-width tables.
// Plain C++, no I/O beyond the stream a caller passes.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace kernelwatch::daemon {

// core::format_latency ("23.38 ms", "577.6 us", "812 ns"): the CLI prints a median exactly as
// the verdicts, the alerts and the notifications do.
[[nodiscard]] std::string format_duration(std::chrono::nanoseconds value);

// Columns padded to their widest cell, two spaces apart, header first.
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows);

}  // namespace kernelwatch::daemon
