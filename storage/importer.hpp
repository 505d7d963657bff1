// Imports files into the store as one transaction: all of it or, on the first invalid record,
// none of it (unless invalid records are skipped by request). kernelindex JSON is read here; any
// other format by the FileReader the caller hands in (a Liger CSV: runners/liger_import.hpp).
// Plain C++ over core and storage types.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "storage/connection.hpp"
#include "storage/import_target.hpp"

namespace kernelwatch::storage {

enum class InvalidPolicy { Abort, Skip };

struct ImportReport {
  std::size_t read = 0;              // records and data rows read
  std::size_t inserted = 0;          // new runs stored
  std::size_t duplicates = 0;        // runs already stored (or twice in this import)
  std::size_t skipped = 0;           // skipped_by_design + invalid skipped
  std::size_t memory_rows = 0;       // rows skipped by design (Liger's memory rows: not latency)
  std::vector<std::string> invalid;  // "FILE:LINE: why" for each skipped invalid record
  // Of the runs read, those stored from what their shape's first run derived
  // (ImportTarget::store_like): for tests and benchmarks.
  std::size_t derived = 0;
};

// A file is `reader`'s when it says so of its extension; else kernelindex JSON by its extension
// (.json, .jsonl, .ndjson) or its first character ('{' or '['); else `reader`'s. Without a reader
// every file is read as kernelindex JSON.
// On Abort, the first invalid record fails the whole import with "FILE:LINE: why" and the
// database is unchanged. A run dated more than core::kFutureTolerance after `now` is invalid:
// as its key's newest run it would keep every later run from being judged.
[[nodiscard]] Result<ImportReport> import_files(
    Connection& connection, std::span<const std::filesystem::path> paths, InvalidPolicy policy,
    const FileReader* reader = nullptr, core::Timestamp now = core::Timestamp::clock::now());

}  // namespace kernelwatch::storage
