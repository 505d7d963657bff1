// Storage-private: where an import's items go, one at a time, inside the import's transaction:
// counted in its report, checked against the clock, stored as runs, or (invalid) failing the
// import with "FILE:LINE: why" unless invalid input is skipped. The kernelindex readers
// (storage/importer.cpp) and any FileReader (storage/import_target.hpp) hand it what they read.
// Runs of one shape after the first are stored from the first's row and what each has of its
// own (storage/shaped_runs.cpp): the first run of each shape, and the first of each
// implementation (the one text of a run's own in its record, so the schemas check it), goes the
// way of any record (record, key, documents, template: prepare_run); what it derived is kept, and
// every later run fills in only its RunDelta without building JSON. The first run also checks
// that the two ways give the same row: where they would not, that shape keeps the slow way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/time.hpp"
#include "storage/detail/run_rows.hpp"
#include "storage/import_target.hpp"
#include "storage/importer.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::storage {

class ImportSink final : public ImportTarget {
 public:
  ImportSink(Database& db, WriteCache& cache, ImportReport& report, InvalidPolicy policy,
             core::Timestamp now)
      : db_(&db), cache_(&cache), report_(&report), policy_(policy), now_(now) {}

  // The file whose items come next ("FILE" of "FILE:LINE"); its shapes are its own (a run's raw
  // source names its file).
  void start_file(std::string name) {
    file_ = std::move(name);
    forget_shapes();
  }
  // After a rollback: the rows the shapes were taken from may be gone.
  void forget_shapes() {
    shapes_.clear();
    implementations_.clear();
  }

  // One item as a reader made it: counted as read, then stored, skipped or refused.
  [[nodiscard]] core::Status store(const SourceItem& item) override;
  [[nodiscard]] core::Result<LikeOutcome> store_like(const std::string& shape,
                                                     const RunDelta& delta) override;
  [[nodiscard]] core::Status store_first(const SourceItem& item, const std::string& shape,
                                         const RunDelta* delta) override;

 private:
  struct Shape {
    bool fast = false;
    RunRow row;                      // the first run's, ids and all
    std::string external_id_prefix;  // before the run's time
    std::string name_prefix;
  };

  // The parts of store(). Each counts what it did; read() counts one record or row read.
  void read() { ++report_->read; }
  void memory_row();
  [[nodiscard]] core::Status invalid(std::size_t line, const std::string& reason);
  // The reason a run dated this late is refused, or nullopt.
  [[nodiscard]] std::optional<std::string> too_late(core::Timestamp observed) const;
  // A valid run's record stored (or found stored), with everything it is made of. `prepared`
  // (may be null) receives the row it stored when it prepared one; a run already stored is
  // found by its key and observedAt before anything else is derived (`prepared` then untouched).
  [[nodiscard]] core::Status insert(const SourceItem& item, std::optional<RunRow>* prepared);
  void counted(InsertOutcome outcome);
  // "FILE:LINE" of the current file.
  [[nodiscard]] std::string where(std::size_t line) const {
    return file_ + ":" + std::to_string(line);
  }

  // The implementation row of the delta's digest (stored unless present); nullopt when a row of
  // that digest says another version (the run then goes the slow way).
  [[nodiscard]] core::Result<std::optional<std::int64_t>> implementation(const RunDelta& delta);
  void fill(const Shape& shape, const RunDelta& delta, std::int64_t implementation,
            RunRow& out) const;
  // "2025-07-17-18-18-16" of a time (the last one kept: the runs of a benchmark run share it).
  [[nodiscard]] const std::string& id_time_of(std::int64_t observed_at_ns) const;

  Database* db_;
  WriteCache* cache_;
  ImportReport* report_;
  InvalidPolicy policy_;
  core::Timestamp now_;
  std::string file_;
  // Of the current file: implementation ids by digest (nullopt: another version's), shapes.
  std::unordered_map<std::string, std::optional<std::int64_t>> implementations_;
  std::unordered_map<std::string, Shape> shapes_;
  std::string digest_;  // scratch
  RunRow scratch_;
  mutable std::int64_t last_time_ns_ = 0;
  mutable std::string last_id_time_ = core::format_id_timestamp(core::Timestamp{});
};

}  // namespace kernelwatch::storage
