// Runners-private: a Liger CSV file's header and what one of its data rows is (a run, a memory
// row skipped by design, or an invalid row with its reason), as read_liger_csv() and the
// streaming import (runners/liger_import.cpp) both read them. Uses nlohmann/json, no SQLite.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "runners/liger_csv.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::runners {

struct LigerHeader {
  std::vector<std::string> names;              // as written
  std::map<std::string, std::size_t> columns;  // name -> its first column
};

// The header row checked: UTF-8, every required column. "LINE: why" when it is not one.
[[nodiscard]] core::Result<LigerHeader> read_liger_header(const CsvRow& header);

// One data row as a source item; file_name goes into the run's raw source.
[[nodiscard]] storage::SourceItem liger_row_item(const LigerHeader& header, const CsvRow& row,
                                                 std::string_view file_name);

}  // namespace kernelwatch::runners
