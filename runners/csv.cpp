#include "runners/csv.hpp"

#include <array>

namespace kernelwatch::runners {

using core::ErrorCode;

core::Status CsvReader::refill() {
  piece_ = KW_TRY(chunks_());
  if (piece_.empty()) ended_ = true;
  return {};
}

core::Result<bool> CsvReader::next(CsvRow& row) {
  // Characters that end a run of plain text outside quotes.
  static const auto kSpecial = [] {
    std::array<bool, 256> table{};
    for (unsigned char c : {'"', ',', '\r', '\n'}) table[c] = true;
    return table;
  }();
  std::size_t count = 0;  // fields finished
  const auto field = [&]() -> std::string& {
    if (count == row.fields.size()) row.fields.emplace_back();
    return row.fields[count];
  };
  field().clear();
  row.line = line_;
  bool in_quotes = false;
  bool quote_pending = false;  // a '"' inside quotes: the end of the quotes, or the first of ""
  bool row_started = false;
  std::size_t quote_line = 0;
  std::size_t bytes = 0;
  while (true) {
    if (piece_.empty()) {
      if (ended_) break;
      KW_TRY(refill());
      if (piece_.empty()) break;
    }
    const char* p = piece_.data();
    const std::size_t n = piece_.size();
    std::size_t i = 0;
    while (i < n) {
      const char c = p[i];
      if (in_quotes) {
        if (quote_pending) {
          quote_pending = false;
          if (c == '"') {
            field() += '"';
            ++i;
          } else {
            in_quotes = false;  // c is read again, outside the quotes
          }
          continue;
        }
        std::size_t j = i;
        while (j < n && p[j] != '"' && p[j] != '\n') ++j;
        field().append(p + i, j - i);
        i = j;
        if (i == n) break;
        if (p[i] == '\n') {
          ++line_;
          field() += '\n';
        } else {
          quote_pending = true;
        }
        ++i;
        continue;
      }
      switch (c) {
        case '"':
          in_quotes = true;
          quote_line = line_;
          row_started = true;
          ++i;
          break;
        case ',':
          ++count;
          field().clear();
          row_started = true;
          ++i;
          break;
        case '\r':
          ++i;
          break;
        case '\n':
          ++i;
          ++line_;
          if (row_started || !field().empty()) {
            piece_.remove_prefix(i);
            row.fields.resize(count + 1);
            return true;
          }
          row.line = line_;  // a blank line is no row
          break;
        default: {
          std::size_t j = i + 1;
          while (j < n && !kSpecial[static_cast<unsigned char>(p[j])]) ++j;
          field().append(p + i, j - i);
          row_started = true;
          i = j;
          break;
        }
      }
    }
    bytes += i;
    piece_.remove_prefix(i);
    if (bytes > storage::kMaxLineBytes) {
      return core::fail(ErrorCode::InvalidArgument,
                        std::to_string(row.line) + ": a row longer than 64 MiB");
    }
  }
  if (in_quotes && !quote_pending) {
    return core::fail(ErrorCode::ParseError,
                      std::to_string(quote_line) + ": unterminated quoted field");
  }
  if (row_started || !field().empty()) {
    row.fields.resize(count + 1);
    return true;
  }
  row.fields.clear();
  return false;
}

core::Result<std::vector<CsvRow>> parse_csv(std::string_view text) {
  bool given = false;
  CsvReader reader([&]() -> core::Result<std::string_view> {
    if (given) return std::string_view();
    given = true;
    return text;
  });
  std::vector<CsvRow> rows;
  CsvRow row;
  while (KW_TRY(reader.next(row))) rows.push_back(row);
  return rows;
}

}  // namespace kernelwatch::runners
