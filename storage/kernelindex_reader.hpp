// Reads kernelindex v1alpha1 records from text: one record, a JSON array of records, or JSON
// Lines. A record is kernelwatch's bundle ({run, protocol, environment}) or, as kernelindex tools
// export them, separate documents (ExecutionEnvironment, BenchmarkProtocol, WorkloadCase,
// ImplementationRevision, BenchmarkRun, in any order) joined by their kernelindex digests. Every
// document is checked against the public schemas (kernelwatch's own earlier forms upgraded
// first). Every problem is reported with the line it starts on. Uses nlohmann/json, no SQLite.
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
