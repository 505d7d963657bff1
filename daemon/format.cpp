#include "daemon/format.hpp"

#include "core/time.hpp"

#include <algorithm>

namespace kernelwatch::daemon {

std::string format_duration(std::chrono::nanoseconds value) {
  return core::format_latency(value);
}

void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, const TableLayout& layout) {
  std::vector<std::size_t> widths(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) widths[i] = header[i].size();
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  // Too wide: the shrinkable columns give up their excess, in order, down to their header.
  std::size_t total = layout.indent;
  for (std::size_t w : widths) total += w + 2;
  total -= widths.empty() ? 0 : 2;
  for (std::size_t column : layout.shrink) {
    if (layout.max_width == 0 || total <= layout.max_width || column >= widths.size()) continue;
    const std::size_t floor = std::max<std::size_t>(header[column].size(), 4);
    const std::size_t cut =
        std::min(total - layout.max_width, widths[column] - std::min(widths[column], floor));
    widths[column] -= cut;
    total -= cut;
  }
  const auto cell = [&](const std::string& text, std::size_t column) {
    if (text.size() <= widths[column]) return text;
    return text.substr(0, widths[column] - 1) + "~";
  };
  const auto print_row = [&](const std::vector<std::string>& row) {
    std::string line(layout.indent, ' ');
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string text = i < widths.size() ? cell(row[i], i) : row[i];
      line += text;
      if (i + 1 < row.size()) line += std::string(widths[i] - text.size() + 2, ' ');
    }
    out << line << '\n';
  };
  print_row(header);
  for (const auto& row : rows) print_row(row);
}

}  // namespace kernelwatch::daemon
