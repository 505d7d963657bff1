// Reads Liger-Kernel benchmark CSV (all_benchmark_data.csv and the weekly CI files) into
// kernelindex records shaped like the founding fixtures. Speed rows become runs; memory rows are
// skipped and counted. Columns it does not know are ignored. Uses nlohmann/json, no SQLite.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::storage {

// Splits RFC 4180 CSV into rows of fields; quoted fields may hold commas, quotes ("") and
// newlines. Each row remembers the line it starts on. Fails on an unterminated quote.
struct CsvRow {
  std::size_t line = 0;
  std::vector<std::string> fields;
};
[[nodiscard]] core::Result<std::vector<CsvRow>> parse_csv(std::string_view text);

// file_name goes into each run's raw source. A missing required column fails the whole file.
[[nodiscard]] core::Result<std::vector<SourceItem>> read_liger_csv(std::string_view text,
                                                                   std::string_view file_name);

}  // namespace kernelwatch::storage
