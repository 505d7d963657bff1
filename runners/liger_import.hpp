// The import of Liger-Kernel benchmark CSV files (`kernelwatch import`): a storage::FileReader
// that streams a file's rows (gzip or not) in flat memory and hands each to the import as what
// it is (runners/liger_csv.hpp): a run, a memory row skipped by design, or an invalid row. Rows
// of one key's columns as written (kernel, provider, pass, x, config, GPU) are one shape: after
// its first, a row is handed over as only what it has of its own (time, latencies, Liger
// version, line, the other columns), without building JSON, and storage fills in the rest from
// the shape's first run (storage::ImportTarget::store_like). Invalid rows always take the slow
// way, so their reasons are read_liger_csv()'s. Uses storage's neutral import types, no SQLite.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "storage/import_target.hpp"

namespace kernelwatch::runners {

class LigerCsvReader final : public storage::FileReader {
 public:
  [[nodiscard]] bool reads_extension(std::string_view extension) const override;
  [[nodiscard]] core::Result<std::optional<std::string>> read(
      const std::filesystem::path& path, storage::ImportTarget& target) const override;
};

// The one reader, for storage::import_files.
[[nodiscard]] const storage::FileReader& liger_csv_reader();

}  // namespace kernelwatch::runners
