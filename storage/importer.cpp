#include "storage/importer.hpp"

#include <array>
#include <cstdint>

#include "storage/detail/import_sink.hpp"
#include "storage/detail/kernelindex_lines.hpp"
#include "storage/input.hpp"
#include "storage/kernelindex_reader.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

// The page cache of an import's connection, in KiB: an import of a million runs touches the
// (key, observedAt) index all over; with SQLite's default 2 MiB most of its writes were reads of
// pages just evicted. Bounded: this is most of an import's memory.
constexpr int kImportCacheKiB = 64 * 1024;

bool gzipped(const std::filesystem::path& path) {
  return path.extension() == ".gz";
}

Result<std::shared_ptr<InputFile>> open_input(const std::filesystem::path& path) {
  return std::make_shared<InputFile>(KW_TRY(InputFile::open(path)));
}

// Whether `reader` reads the file: by extension, else by the first character that is not
// whitespace (kernelindex JSON starts with '{' or '[').
Result<bool> read_by(const std::filesystem::path& path, const FileReader* reader) {
  if (reader == nullptr) return false;
  const std::string ext = (gzipped(path) ? path.stem() : path).extension().string();
  if (reader->reads_extension(ext)) return true;
  if (ext == ".json" || ext == ".jsonl" || ext == ".ndjson") return false;
  auto input = KW_TRY(InputFile::open(path));
  std::array<char, 4096> head{};
  while (true) {
    const std::size_t got = KW_TRY(input.read(head.data(), head.size()));
    if (got == 0) return true;
    const std::string_view text(head.data(), got);
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) continue;
    return text[first] != '{' && text[first] != '[';
  }
}

// kernelindex JSON: JSON Lines streamed, one JSON document (an array, a pretty-printed record)
// read whole (at most 1 GiB).
Status import_kernelindex(const std::filesystem::path& path, ImportSink& sink) {
  const auto emit = [&](const SourceItem& item) { return sink.store(item); };
  bool lines = false;
  {
    const auto input = KW_TRY(open_input(path));
    LineReader reader(chunks_of(input), path.string());
    std::string_view line;
    while (KW_TRY(reader.next(line))) {
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      lines = starts_json_lines(line);
      break;
    }
  }
  if (!lines) {
    auto input = KW_TRY(InputFile::open(path));
    const std::string text = KW_TRY(input.read_all());
    for (const SourceItem& item : read_kernelindex(text)) KW_TRY(emit(item));
    return {};
  }
  const auto open = [&]() -> Result<Chunks> { return chunks_of(KW_TRY(open_input(path))); };
  return read_kernelindex_lines(open, emit, path.string());
}

}  // namespace

Status ImportSink::store(const SourceItem& item) {
  read();
  switch (item.kind) {
    case ItemKind::Skipped:
      memory_row();
      return {};
    case ItemKind::Invalid:
      return invalid(item.line, item.reason);
    case ItemKind::Run:
      break;
  }
  if (auto late = too_late(item.record.run.observed_at)) return invalid(item.line, *late);
  return insert(item, nullptr);
}

void ImportSink::memory_row() {
  ++report_->skipped;
  ++report_->memory_rows;
}

Status ImportSink::invalid(std::size_t line, const std::string& reason) {
  if (policy_ == InvalidPolicy::Abort) {
    return core::fail(ErrorCode::ParseError, where(line) + ": " + reason);
  }
  ++report_->skipped;
  report_->invalid.push_back(where(line) + ": " + reason);
  return {};
}

std::optional<std::string> ImportSink::too_late(core::Timestamp observed) const {
  // As its key's newest run it would keep every later run from being judged.
  if (observed <= now_ + core::kFutureTolerance) return std::nullopt;
  return "run.spec.observedAt " + core::format_timestamp(observed) + " is more than " +
         std::to_string(core::kFutureTolerance.count()) + " minutes after this machine's clock (" +
         core::format_timestamp(now_) + ")";
}

Status ImportSink::insert(const SourceItem& item, std::optional<RunRow>* prepared) {
  const auto refused = [&](const core::Error& error) -> Status {
    // A record whose key cannot be derived is bad input; a failing database is not.
    if (error.code != ErrorCode::ParseError)
      return tl::unexpected(error.with_context(where(item.line)));
    return invalid(item.line, error.message);
  };
  // The run's one key derivation on import (a core::Run would copy the record).
  auto key = core::key_of(item.record);
  if (!key) return refused(key.error());
  Database& db = *db_;
  const std::string key_digest = key->digest();
  if (prepared == nullptr) {
    // A run stored before (a re-import) is found by its key and observedAt before its documents
    // and template are made.
    std::optional<std::int64_t> key_id;
    if (const auto it = cache_->keys.find(key_digest); it != cache_->keys.end()) {
      key_id = it->second;
    } else {
      auto find = KW_TRY(db.statement("SELECT id FROM keys WHERE digest = ?1"));
      find->bind(1, key_digest);
      if (KW_TRY(find->step())) key_id = find->column_int(0);
    }
    if (key_id) {
      auto stored =
          KW_TRY(db.statement("SELECT 1 FROM runs WHERE key_id = ?1 AND observed_at_ns = ?2"));
      stored->bind(1, *key_id).bind(2, item.record.run.observed_at);
      if (KW_TRY(stored->step())) {
        counted(InsertOutcome::Duplicate);
        return {};
      }
    }
  }
  auto row = prepare_run(db, item.record, *key, key_digest, item.raw, cache_);
  if (!row) return refused(row.error());
  const InsertOutcome outcome = KW_TRY_WITH(insert_run_row(db, *row), where(item.line));
  counted(outcome);
  if (prepared != nullptr) *prepared = std::move(*row);
  return {};
}

void ImportSink::counted(InsertOutcome outcome) {
  ++(outcome == InsertOutcome::Inserted ? report_->inserted : report_->duplicates);
}

Result<ImportReport> import_files(Connection& connection,
                                  std::span<const std::filesystem::path> paths,
                                  InvalidPolicy policy, const FileReader* reader,
                                  core::Timestamp now) {
  ImportReport report;
  Database& db = connection.database();
  // Files are read as they are stored, inside the one transaction: an input of any size in
  // flat memory (the price: the write lock is held while the input is read).
  auto tx = KW_TRY(connection.begin());  // rolled back by every early return
  if (db.dialect() == Dialect::Sqlite) {
    KW_TRY(db.exec("PRAGMA cache_size = -" + std::to_string(kImportCacheKiB)));
  }
  WriteCache cache;
  ImportSink sink(db, cache, report, policy, now);
  for (const auto& path : paths) {
    const std::string name = path.string();
    sink.start_file(name);
    if (!KW_TRY(read_by(path, reader))) {
      KW_TRY(import_kernelindex(path, sink));
      continue;
    }
    // A file found bad as a whole (at its end: a CSV's unterminated quote) is skipped
    // whole on Skip: its rows stored so far go back out with a savepoint.
    KW_TRY(db.exec("SAVEPOINT import_file"));
    const ImportReport before = report;
    const auto problem = KW_TRY(reader->read(path, sink));
    if (!problem) {
      KW_TRY(db.exec("RELEASE import_file"));
      continue;
    }
    if (policy == InvalidPolicy::Abort) {
      return core::fail(ErrorCode::ParseError, name + ": " + *problem);
    }
    KW_TRY(db.exec("ROLLBACK TO import_file"));
    KW_TRY(db.exec("RELEASE import_file"));
    cache = WriteCache{};  // what it remembered may have gone with the rollback
    sink.forget_shapes();
    report = before;
    report.invalid.push_back(name + ":" + *problem);
    ++report.skipped;
  }
  KW_TRY(tx.commit());
  return report;
}

}  // namespace kernelwatch::storage
