#include "storage/kernelindex_reader.hpp"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_limits.hpp"

namespace kernelwatch::storage {
namespace {

using nlohmann::json;

std::size_t line_at(std::string_view text, std::size_t offset) {
  return core::line_of_offset(text, offset);
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

std::string parse_error_text(const core::JsonTextError& e) {
  return "malformed JSON: " + e.message;
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
  // Nesting deeper than any record has is refused before anything parses it (the whole text,
  // then each line of JSON Lines).
  auto parsed = core::parse_json_text(text);
  if (!parsed) {
    const core::JsonTextError& whole_error = parsed.error();
    // JSON Lines: the first non-empty line must parse as an object on its own.
    std::size_t start = 0;
    std::size_t line = 1;
    bool first = true;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view row = text.substr(start, end - start);
      if (row.find_first_not_of(" \t\r") != std::string_view::npos) {
        auto value = core::parse_json_text(row);
        if (value) {
          items.push_back(to_item(*value, line));
        } else {
          if (first)
            return {invalid(line_at(text, whole_error.byte), parse_error_text(whole_error))};
          items.push_back(invalid(line, parse_error_text(value.error())));
        }
        first = false;
      }
      start = end + 1;
      ++line;
    }
    if (items.empty()) items.push_back(invalid(1, "no records (the file is empty)"));
    return items;
  }
  const json& whole = *parsed;
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
