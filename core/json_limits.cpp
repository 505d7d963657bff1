#include "core/json_limits.hpp"

#include <algorithm>

namespace kernelwatch::core {
namespace {

using nlohmann::json;

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error
// while parsing value - invalid literal; last read: 'x'" -> "syntax error while parsing value -
// invalid literal" (the echo may be part of a secret).
std::string clean_message(std::string what) {
  if (const auto at = what.find("parse error"); at != std::string::npos) {
    const auto colon = what.find(": ", at);
    what = colon == std::string::npos ? std::string() : what.substr(colon + 2);
  } else if (const auto bracket = what.find("] ");
             what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) {
    what = what.substr(bracket + 2);
  }
  if (const auto echo = what.find("; last read:"); echo != std::string::npos) what.resize(echo);
  return what;
}

}  // namespace

std::optional<std::size_t> json_depth_exceeded(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

tl::expected<json, JsonTextError> parse_json_text(std::string_view text, std::size_t max_depth) {
  if (const auto at = json_depth_exceeded(text, max_depth)) {
    return tl::unexpected(JsonTextError{
        *at, "nesting deeper than " + std::to_string(max_depth) + " levels of arrays and objects"});
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& error) {
    return tl::unexpected(
        JsonTextError{error.byte == 0 ? 0 : error.byte - 1, clean_message(error.what())});
  } catch (const json::exception& error) {
    // out_of_range.406: a number beyond a double (1e400). Its position is not kept.
    std::string message = clean_message(error.what());
    if (error.id == 406) message = "a number is out of range (" + message + ")";
    return tl::unexpected(JsonTextError{0, std::move(message)});
  }
}

std::size_t line_of_offset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(
                 text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

namespace {

// The length of the well-formed UTF-8 sequence at text[i], or 0 when there is none.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    length = 3;
    if (c == 0xE0) low = 0xA0;   // overlong
    if (c == 0xED) high = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    length = 4;
    if (c == 0xF0) low = 0x90;   // overlong
    if (c == 0xF4) high = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  const auto second = static_cast<unsigned char>(text[i + 1]);
  if (second < low || second > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if (next < 0x80 || next > 0xBF) return 0;
  }
  return length;
}

}  // namespace

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string utf8_prefix(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence(text, i);
    const std::string_view piece = length == 0 ? "\xEF\xBF\xBD" : text.substr(i, length);
    if (out.size() + piece.size() > max_bytes) break;
    out += piece;
    i += length == 0 ? 1 : length;
  }
  return out;
}

std::string printable_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace kernelwatch::core
