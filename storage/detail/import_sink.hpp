// Storage-private: where an import's items go, one at a time, inside the import's transaction:
// counted in its report, checked against the clock, stored as runs, or (invalid) failing the
// import with "FILE:LINE: why" unless invalid input is skipped. The readers of each format
// (storage/importer.cpp, storage/liger_import.cpp) hand it what they read.
#pragma once

#include <optional>
#include <string>

#include "core/time.hpp"
#include "storage/detail/run_rows.hpp"
#include "storage/importer.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::storage {

class ImportSink {
 public:
  ImportSink(Database& db, WriteCache& cache, ImportReport& report, InvalidPolicy policy,
             core::Timestamp now)
      : db_(&db), cache_(&cache), report_(&report), policy_(policy), now_(now) {}

  // The file whose items come next ("FILE" of "FILE:LINE").
  void start_file(std::string name) { file_ = std::move(name); }

  // One item as a reader made it: counted as read, then stored, skipped or refused.
  [[nodiscard]] core::Status store(const SourceItem& item);

  // The parts of store() for a reader that does some of the work itself. Each counts what it
  // did; read() counts one record or row read.
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

  [[nodiscard]] Database& db() const { return *db_; }
  [[nodiscard]] ImportReport& report() const { return *report_; }
  // "FILE:LINE" of the current file.
  [[nodiscard]] std::string where(std::size_t line) const {
    return file_ + ":" + std::to_string(line);
  }

 private:
  Database* db_;
  WriteCache* cache_;
  ImportReport* report_;
  InvalidPolicy policy_;
  core::Timestamp now_;
  std::string file_;
};

}  // namespace kernelwatch::storage
