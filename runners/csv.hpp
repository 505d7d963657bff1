// RFC 4180 CSV read a row at a time from a storage::Chunks source (a file, gzip or not, read as
// the import reads it: storage/input.hpp), so that a file of any size is read in flat memory;
// and a whole text's rows at once. Plain C++ over core and storage types.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "storage/input.hpp"

namespace kernelwatch::runners {

// One row of fields and the line it starts on.
struct CsvRow {
  std::size_t line = 0;
  std::vector<std::string> fields;
};

// RFC 4180 rows of a text: quoted fields may hold commas, quotes ("") and newlines; '\r' outside
// quotes is dropped; blank lines are no rows. Each row remembers the line it starts on.
class CsvReader {
 public:
  explicit CsvReader(storage::Chunks chunks) : chunks_(std::move(chunks)) {}
  // The next row into `row` (the storage of its fields reused); false at the end. An
  // unterminated quote is a ParseError "LINE: unterminated quoted field"; a row longer than
  // storage::kMaxLineBytes an InvalidArgument "LINE: ...".
  [[nodiscard]] core::Result<bool> next(CsvRow& row);

 private:
  [[nodiscard]] core::Status refill();
  storage::Chunks chunks_;
  std::string_view piece_;
  bool ended_ = false;
  std::size_t line_ = 1;
};

// Splits a whole text into rows of fields; quoted fields may hold commas, quotes ("") and
// newlines. Fails on an unterminated quote.
[[nodiscard]] core::Result<std::vector<CsvRow>> parse_csv(std::string_view text);

}  // namespace kernelwatch::runners
