// Reads kernelindex v1alpha1 records from text: one record, a JSON array of records, or JSON
// Lines. Every problem is reported with the line it starts on. Uses nlohmann/json, no SQLite.
#pragma once

#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::storage {

// Never fails as a whole: text that is not JSON at all becomes one Invalid item at the line of
// the syntax error.
[[nodiscard]] std::vector<SourceItem> read_kernelindex(std::string_view text);

}  // namespace kernelwatch::storage
