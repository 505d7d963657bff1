#include "storage/importer.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>

#include <zlib.h>

#include "storage/kernelindex_reader.hpp"
#include "storage/liger_csv.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;

// The most one input may hold, read or after decompression: far beyond any benchmark history,
// far below what would exhaust the machine.
constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t{1} << 30;

bool gzipped(const std::filesystem::path& path) {
  return path.extension() == ".gz";
}

// A .gz file's contents (gzip, as Liger's CI artifacts and the data/ folder keep big CSVs).
Result<std::string> gunzip(const std::string& packed, const std::filesystem::path& path) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) {
    return core::fail(ErrorCode::Internal, path.string() + ": cannot start gzip decompression");
  }
  std::string out;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  stream.avail_in = static_cast<uInt>(packed.size());
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    rc = inflate(&stream, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(chunk, sizeof chunk - stream.avail_out);
    if (out.size() > kMaxInputBytes) {
      inflateEnd(&stream);
      return core::fail(ErrorCode::InvalidArgument,
                        path.string() + ": decompresses to more than 1 GiB; split it");
    }
    if (rc == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) break;  // truncated
  }
  inflateEnd(&stream);
  if (rc != Z_STREAM_END) {
    return core::fail(ErrorCode::ParseError, path.string() + ": not a complete gzip file");
  }
  return out;
}

Result<std::string> read_text(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return core::fail(ErrorCode::NotFound, path.string() + ": cannot open for reading");
  }
  if (std::filesystem::is_directory(status)) {
    return core::fail(ErrorCode::InvalidArgument, path.string() + ": is a directory");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return core::fail(ErrorCode::InvalidArgument,
                      path.string() + ": is not a regular file (a device, pipe or socket)");
  }
  if (std::filesystem::file_size(path, ec) > kMaxInputBytes) {
    return core::fail(ErrorCode::InvalidArgument, path.string() + ": is over 1 GiB; split it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::fail(ErrorCode::NotFound, path.string() + ": cannot open for reading");
  // Read once into a buffer of the file's size (no second copy), at most kMaxInputBytes + 1
  // whatever the size said: a file that grows while read is still capped.
  std::string text;
  const std::uintmax_t expected = std::filesystem::file_size(path, ec);
  if (!ec) text.reserve(static_cast<std::size_t>(std::min(expected, kMaxInputBytes)));
  std::size_t size = 0;
  std::array<char, 1 << 16> chunk{};
  while (in) {
    in.read(chunk.data(), chunk.size());
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    if (size + got > kMaxInputBytes) {
      return core::fail(ErrorCode::InvalidArgument, path.string() + ": is over 1 GiB; split it");
    }
    text.append(chunk.data(), got);
    size += got;
  }
  if (in.bad()) return core::fail(ErrorCode::IoError, path.string() + ": read failed");
  if (gzipped(path)) return gunzip(text, path);
  return text;
}

}  // namespace

SourceFormat detect_format(const std::filesystem::path& path, std::string_view text) {
  // "history.csv.gz" is a CSV.
  const std::string ext = (gzipped(path) ? path.stem() : path).extension().string();
  if (ext == ".csv") return SourceFormat::LigerCsv;
  if (ext == ".json" || ext == ".jsonl" || ext == ".ndjson") return SourceFormat::Kernelindex;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    return SourceFormat::Kernelindex;
  }
  return SourceFormat::LigerCsv;
}

namespace {

// One input file, read and parsed before the transaction starts.
struct ParsedFile {
  std::string name;
  std::vector<SourceItem> items;
};

// Reads and parses every file; whole-file problems abort or, on Skip, are reported and the
// file left out.
Result<std::vector<ParsedFile>> read_all(std::span<const std::filesystem::path> paths,
                                         InvalidPolicy policy, SourceFormat format,
                                         ImportReport& report) {
  std::vector<ParsedFile> parsed;
  for (const auto& path : paths) {
    const std::string name = path.string();
    const std::string text = KW_TRY(read_text(path));
    const SourceFormat actual = format == SourceFormat::Auto ? detect_format(path, text) : format;
    if (actual != SourceFormat::LigerCsv) {
      parsed.push_back({name, read_kernelindex(text)});
      continue;
    }
    auto items = read_liger_csv(text, path.filename().string());
    if (!items) {
      // Whole-file problems (no header, unterminated quote) carry "LINE: why".
      if (policy == InvalidPolicy::Abort) return tl::unexpected(items.error().with_context(name));
      report.invalid.push_back(name + ":" + items.error().message);
      ++report.skipped;
      continue;
    }
    parsed.push_back({name, std::move(*items)});
  }
  return parsed;
}

// Stores one parsed item inside the import's transaction and counts it.
Status store_item(RunStore& runs, Transaction& tx, const SourceItem& given,
                  const std::string& where, InvalidPolicy policy, core::Timestamp now,
                  ImportReport& report) {
  ++report.read;
  const SourceItem* checked = &given;
  SourceItem future;
  if (given.kind == ItemKind::Run && given.record.run.observed_at > now + core::kFutureTolerance) {
    future.line = given.line;
    future.kind = ItemKind::Invalid;
    future.reason = "run.spec.observedAt " + core::format_timestamp(given.record.run.observed_at) +
                    " is more than " + std::to_string(core::kFutureTolerance.count()) +
                    " minutes after this machine's clock (" + core::format_timestamp(now) + ")";
    checked = &future;
  }
  const SourceItem& item = *checked;
  switch (item.kind) {
    case ItemKind::Skipped:
      ++report.skipped;
      ++report.memory_rows;
      return {};
    case ItemKind::Invalid:
      if (policy == InvalidPolicy::Abort) {
        return core::fail(ErrorCode::ParseError, where + ": " + item.reason);
      }
      ++report.skipped;
      report.invalid.push_back(where + ": " + item.reason);
      return {};
    case ItemKind::Run:
      break;
  }
  auto inserted = runs.insert_run(tx, item.record, item.raw);
  if (!inserted) {
    const core::Error& error = inserted.error();
    // A record whose key cannot be derived is bad input; a failing database is not.
    if (error.code != ErrorCode::ParseError || policy == InvalidPolicy::Abort) {
      return tl::unexpected(error.with_context(where));
    }
    ++report.skipped;
    report.invalid.push_back(where + ": " + error.message);
    return {};
  }
  ++(inserted->outcome == InsertOutcome::Inserted ? report.inserted : report.duplicates);
  return {};
}

}  // namespace

Result<ImportReport> import_files(Connection& connection,
                                  std::span<const std::filesystem::path> paths,
                                  InvalidPolicy policy, SourceFormat format, core::Timestamp now) {
  ImportReport report;
  // Every file is read and parsed before the transaction starts: a bad file costs no lock time.
  const std::vector<ParsedFile> parsed = KW_TRY(read_all(paths, policy, format, report));
  RunStore runs(connection);
  auto tx = KW_TRY(connection.begin());  // rolled back by every early return
  for (const auto& file : parsed) {
    for (const auto& item : file.items) {
      KW_TRY(store_item(runs, tx, item, file.name + ":" + std::to_string(item.line), policy, now,
                        report));
    }
  }
  KW_TRY(tx.commit());
  return report;
}

}  // namespace kernelwatch::storage
