#include "storage/importer.hpp"

#include <fstream>
#include <sstream>

#include "storage/kernelindex_reader.hpp"
#include "storage/liger_csv.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

Result<std::string> read_text(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return core::fail(ErrorCode::InvalidArgument, path.string() + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::fail(ErrorCode::NotFound, path.string() + ": cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return core::fail(ErrorCode::IoError, path.string() + ": read failed");
  return buffer.str();
}

}  // namespace

SourceFormat detect_format(const std::filesystem::path& path, std::string_view text) {
  const std::string ext = path.extension().string();
  if (ext == ".csv") return SourceFormat::LigerCsv;
  if (ext == ".json" || ext == ".jsonl" || ext == ".ndjson") return SourceFormat::Kernelindex;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    return SourceFormat::Kernelindex;
  }
  return SourceFormat::LigerCsv;
}

Result<ImportReport> import_files(SqliteStore& store, std::span<const std::filesystem::path> paths,
                                  InvalidPolicy policy, SourceFormat format) {
  ImportReport report;
  // Read and parse every file before the transaction starts: a bad file costs no lock time.
  struct Parsed {
    std::string name;
    std::vector<SourceItem> items;
  };
  std::vector<Parsed> parsed;
  for (const auto& path : paths) {
    const std::string name = path.string();
    auto text = read_text(path);
    if (!text) return tl::unexpected(text.error());
    const SourceFormat actual = format == SourceFormat::Auto ? detect_format(path, *text) : format;
    if (actual == SourceFormat::LigerCsv) {
      auto items = read_liger_csv(*text, path.filename().string());
      if (!items) {
        // Whole-file problems (no header, unterminated quote) carry "LINE: why".
        if (policy == InvalidPolicy::Abort) return tl::unexpected(items.error().with_context(name));
        report.invalid.push_back(name + ":" + items.error().message);
        ++report.skipped;
        continue;
      }
      parsed.push_back({name, std::move(*items)});
    } else {
      parsed.push_back({name, read_kernelindex(*text)});
    }
  }

  auto tx = store.begin();
  if (!tx) return tl::unexpected(tx.error());
  for (auto& file : parsed) {
    for (auto& item : file.items) {
      ++report.read;
      const std::string where = file.name + ":" + std::to_string(item.line);
      switch (item.kind) {
        case ItemKind::Skipped:
          ++report.skipped;
          ++report.memory_rows;
          continue;
        case ItemKind::Invalid:
          if (policy == InvalidPolicy::Abort) {
            return core::fail(ErrorCode::ParseError, where + ": " + item.reason);
          }
          ++report.skipped;
          report.invalid.push_back(where + ": " + item.reason);
          continue;
        case ItemKind::Run:
          break;
      }
      auto outcome = store.insert_run(*tx, item.record, item.raw);
      if (!outcome) {
        const core::Error& error = outcome.error();
        // A record whose key cannot be derived is bad input; a failing database is not.
        if (error.code != ErrorCode::ParseError || policy == InvalidPolicy::Abort) {
          return tl::unexpected(error.with_context(where));
        }
        ++report.skipped;
        report.invalid.push_back(where + ": " + error.message);
        continue;
      }
      if (*outcome == InsertOutcome::Inserted) {
        ++report.inserted;
      } else {
        ++report.duplicates;
      }
    }
  }
  if (auto ok = tx->commit(); !ok) return tl::unexpected(ok.error());
  return report;
}

}  // namespace kernelwatch::storage
