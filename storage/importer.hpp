// Imports kernelindex JSON and Liger CSV files into the store as one transaction: all of it or,
// on the first invalid record, none of it (unless invalid records are skipped by request).
// Plain C++ over core and storage types.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

enum class InvalidPolicy { Abort, Skip };

enum class SourceFormat { Auto, Kernelindex, LigerCsv };

struct ImportReport {
  std::size_t read = 0;              // records and data rows read
  std::size_t inserted = 0;          // new runs stored
  std::size_t duplicates = 0;        // runs already stored (or twice in this import)
  std::size_t skipped = 0;           // skipped_by_design + invalid skipped
  std::size_t memory_rows = 0;       // Liger memory rows: not latency, skipped by design
  std::vector<std::string> invalid;  // "FILE:LINE: why" for each skipped invalid record
  // Of the runs read, those stored from what their key's first row derived (the CSV fast way,
  // storage/detail/liger_import.hpp): for tests and benchmarks.
  std::size_t derived = 0;
};

// Detects the format from the extension (.csv; .json, .jsonl, .ndjson), else from the content.
[[nodiscard]] SourceFormat detect_format(const std::filesystem::path& path, std::string_view text);

// On Abort, the first invalid record fails the whole import with "FILE:LINE: why" and the
// database is unchanged. A run dated more than core::kFutureTolerance after `now` is invalid:
// as its key's newest run it would keep every later run from being judged.
[[nodiscard]] Result<ImportReport> import_files(
    Connection& connection, std::span<const std::filesystem::path> paths, InvalidPolicy policy,
    SourceFormat format = SourceFormat::Auto, core::Timestamp now = core::Timestamp::clock::now());

}  // namespace kernelwatch::storage
