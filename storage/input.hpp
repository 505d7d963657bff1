// An import's input read a piece at a time, so that memory stays flat whatever the file's size: a
// regular file or a gzip file (.gz) decompressed as it is read, and its lines. The readers of
// other formats read their files with it too (runners/csv.hpp: CSV rows). Uses zlib (in
// input.cpp only); no SQLite.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kernelwatch::storage {

// The longest line or CSV row a streamed input may have: far beyond any record, small enough
// that one hostile line cannot exhaust memory.
inline constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;

// The most a whole-document input (one JSON value: an array, a pretty-printed record) may hold,
// read or decompressed: it is parsed in memory.
inline constexpr std::size_t kMaxDocumentBytes = std::size_t{1} << 30;

class InputFile {
 public:
  // Refuses what is not a regular file (a directory, device, pipe or socket) before reading.
  [[nodiscard]] static core::Result<InputFile> open(const std::filesystem::path& path);
  InputFile(InputFile&&) noexcept;
  InputFile& operator=(InputFile&&) noexcept;
  ~InputFile();

  // The next bytes (decompressed for .gz), up to `size`; 0 at the end. A gzip stream that is
  // corrupt or cut short is a ParseError naming the file.
  [[nodiscard]] core::Result<std::size_t> read(char* buffer, std::size_t size);
  // The whole rest of the input, at most kMaxDocumentBytes (else InvalidArgument).
  [[nodiscard]] core::Result<std::string> read_all();
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Whether a read failed (the disk, a corrupt gzip stream): not a problem of the text.
  [[nodiscard]] bool failed() const { return failed_; }

 private:
  struct Gzip;
  InputFile(std::filesystem::path path, int fd);
  [[nodiscard]] core::Result<std::size_t> read_more(char* buffer, std::size_t size);
  std::filesystem::path path_;
  int fd_ = -1;
  bool failed_ = false;
  std::unique_ptr<Gzip> gzip_;
};

// A source of text in pieces; an empty piece is the end.
using Chunks = std::function<core::Result<std::string_view>()>;
// The pieces of an input file, read through a buffer of its own; the file stays open as long as
// the pieces are read.
[[nodiscard]] Chunks chunks_of(std::shared_ptr<InputFile> input);

// The lines of a text ('\n' ends a line; the last may lack it), one at a time.
class LineReader {
 public:
  // `name` (the file's) goes into the reader's own errors.
  LineReader(Chunks chunks, std::string name)
      : chunks_(std::move(chunks)), name_(std::move(name)) {}
  // The next line without its '\n', valid until the next call; false at the end. A line longer
  // than kMaxLineBytes is an InvalidArgument "NAME:LINE: ...".
  [[nodiscard]] core::Result<bool> next(std::string_view& line);
  [[nodiscard]] std::size_t line_number() const { return line_; }  // of the line last returned

 private:
  Chunks chunks_;
  std::string name_;
  std::string buffer_;
  std::size_t start_ = 0;  // of the unread part of buffer_
  std::size_t line_ = 0;
  bool ended_ = false;
};

}  // namespace kernelwatch::storage
