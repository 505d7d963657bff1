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

struct TableLayout {
  std::size_t indent = 0;           // spaces before each line
  std::size_t max_width = 0;        // 0: no limit; else lines are cut to fit it...
  std::vector<std::size_t> shrink;  // ...by cutting these columns' cells first, in this order,
                                    // each to no less than its header (a cut cell ends in "~")
};

// Columns padded to their widest cell, two spaces apart, header first.
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, const TableLayout& layout = {});

}  // namespace kernelwatch::daemon
