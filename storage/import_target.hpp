// The seam between an import and the readers of formats storage does not know (a Liger CSV is
// read by runners/): a FileReader hands what it reads, record by record, to an ImportTarget,
// which counts, checks and stores it inside the import's one transaction. Storage knows neither
// the format's columns nor how its records are made. Plain C++ over core and storage types.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::storage {

// What a run has of its own beside the runs of its shape: a reader whose runs of one shape (its
// own key of them) differ only in these stores most of them without making their records.
struct RunDelta {
  std::size_t line = 0;  // where the run starts ("FILE:LINE" of a failing insert)
  std::int64_t observed_at_ns = 0;
  std::array<std::int64_t, 3> latency_ns{};  // p20, median, p80
  // The run's implementation: its digest and what it is of (stored unless present).
  std::string_view implementation_digest;
  std::string_view provider;
  std::string_view version;
  // The run document's other per-run leaves and its raw source's, as JSON arrays in the order
  // storage keeps them. The reader's word, checked against the first run of each shape: where it
  // does not give that run's row, the shape's runs are stored the slow way.
  std::string_view run_values;
  std::string_view source_values;
};

// Whether a raw source's column (a Liger CSV row's) is kept in its shape's template rather than
// among each run's values: the columns a row's key and record are made of. A reader leaves these
// out of RunDelta::source_values. (Stored rows of schema 8 are split by this rule: it never
// changes without a migration.)
[[nodiscard]] bool template_source_column(std::string_view name);

enum class LikeOutcome {
  Stored,    // stored (or found stored) from its shape and delta
  NewShape,  // first of its shape (or of its implementation): hand it to store_first
  NotLike,   // hand it to store
};

class ImportTarget {
 public:
  virtual ~ImportTarget() = default;

  // One item as a reader made it: counted as read, then stored, skipped by design or refused
  // (invalid: the import fails with "FILE:LINE: why" unless invalid input is skipped).
  [[nodiscard]] virtual core::Status store(const SourceItem& item) = 0;
  // A run of `shape` stored as the shape's first run with `delta` of its own: no record made, no
  // key derived. Anything else is for store_first or store (the outcome says which).
  [[nodiscard]] virtual core::Result<LikeOutcome> store_like(const std::string& shape,
                                                             const RunDelta& delta) = 0;
  // `item` as store() takes it; a valid run's row becomes the shape's. `delta` (may be null) is
  // what the reader would hand store_like for this run: where it gives this run's row, the
  // shape's later runs are stored by store_like.
  [[nodiscard]] virtual core::Status store_first(const SourceItem& item, const std::string& shape,
                                                 const RunDelta* delta) = 0;
};

// A reader of one file format that storage does not know, handed to import_files.
class FileReader {
 public:
  virtual ~FileReader() = default;

  // Whether a file that ends so (".csv"; "x.csv.gz" too) is this reader's. A file of another
  // extension is when its text does not start as kernelindex JSON does ('{' or '[').
  [[nodiscard]] virtual bool reads_extension(std::string_view extension) const = 0;
  // The file's records and rows into `target`, as they are read. nullopt when read through; a
  // problem of the whole file ("LINE: why": no header, an unterminated quote at its end) takes
  // what it stored back out, and fails the import unless invalid input is skipped. A failing
  // disk or database is an error.
  [[nodiscard]] virtual core::Result<std::optional<std::string>> read(
      const std::filesystem::path& path, ImportTarget& target) const = 0;
};

}  // namespace kernelwatch::storage
