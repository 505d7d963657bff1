#include "storage/kernelindex_reader.hpp"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

namespace kernelwatch::storage {
namespace {

using nlohmann::json;

std::size_t line_at(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(
                 text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// Byte offsets where each element of the top-level array starts. The text must be valid JSON
// with an array at the top (parsed before this is called).
std::vector<std::size_t> array_element_offsets(std::string_view text) {
  std::vector<std::size_t> offsets;
  int depth = 0;
  bool in_string = false;
  bool expect_value = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (depth == 1 && expect_value && c != ']') {
      offsets.push_back(i);
      expect_value = false;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        ++depth;
        if (depth == 1) expect_value = true;
        break;
      case ']':
      case '}':
        --depth;
        break;
      case ',':
        if (depth == 1) expect_value = true;
        break;
      default:
        break;
    }
  }
  return offsets;
}

std::string parse_error_text(const json::parse_error& e) {
  // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..." ->
  // "syntax error ..."
  std::string what = e.what();
  if (const auto pos = what.find(": "); pos != std::string::npos) what = what.substr(pos + 2);
  return "malformed JSON: " + what;
}

SourceItem to_item(const json& value, std::size_t line) {
  SourceItem item;
  item.line = line;
  auto record = core::parse_record(value);
  if (!record) {
    item.kind = ItemKind::Invalid;
    item.reason = record.error().message;
    return item;
  }
  item.record = std::move(*record);
  return item;
}

SourceItem invalid(std::size_t line, std::string reason) {
  SourceItem item;
  item.line = line;
  item.kind = ItemKind::Invalid;
  item.reason = std::move(reason);
  return item;
}

}  // namespace

std::vector<SourceItem> read_kernelindex(std::string_view text) {
  std::vector<SourceItem> items;
  json whole;
  try {
    whole = json::parse(text);
  } catch (const json::parse_error& whole_error) {
    // JSON Lines: the first non-empty line must parse as an object on its own.
    std::size_t start = 0;
    std::size_t line = 1;
    bool first = true;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view row = text.substr(start, end - start);
      if (row.find_first_not_of(" \t\r") != std::string_view::npos) {
        try {
          items.push_back(to_item(json::parse(row), line));
        } catch (const json::parse_error& e) {
          if (first) {
            return {invalid(line_at(text, whole_error.byte == 0 ? 0 : whole_error.byte - 1),
                            parse_error_text(whole_error))};
          }
          items.push_back(invalid(line, parse_error_text(e)));
        }
        first = false;
      }
      start = end + 1;
      ++line;
    }
    if (items.empty()) items.push_back(invalid(1, "no records (the file is empty)"));
    return items;
  }
  if (whole.is_array()) {
    const auto offsets = array_element_offsets(text);
    for (std::size_t i = 0; i < whole.size(); ++i) {
      const std::size_t line = i < offsets.size() ? line_at(text, offsets[i]) : 1;
      items.push_back(to_item(whole[i], line));
    }
    return items;
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  items.push_back(to_item(whole, line_at(text, first == std::string_view::npos ? 0 : first)));
  return items;
}

}  // namespace kernelwatch::storage
