// The limits every JSON text kernelwatch did not write passes before nlohmann/json parses it
// (kernelindex records and files, POST bodies, the config file, a runner's output, CSV cells):
// nesting depth checked on the raw bytes without recursion, and a parse that turns every
// nlohmann exception (a syntax error, a number out of range like 1e400) into an error value.
// Plain C++ and nlohmann/json; no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

namespace kernelwatch::core {

// The deepest nesting of arrays and objects accepted anywhere (a kernelindex record needs 6).
// Deeper input is refused before anything recursive (parse, copy, dump) touches it.
inline constexpr std::size_t kMaxJsonDepth = 256;

// The byte offset of the first '[' or '{' that opens level max_depth + 1, or nullopt when the
// text never nests deeper than max_depth. One pass, no recursion; brackets inside strings
// (escapes included) do not count. The text need not be valid JSON.
[[nodiscard]] std::optional<std::size_t> json_depth_exceeded(std::string_view text,
                                                             std::size_t max_depth = kMaxJsonDepth);

// Why a text is not accepted JSON: the byte offset it was found at (0-based) and a message
// without nlohmann's prefix or its echo of the input ("syntax error while parsing value -
// invalid literal", "nesting deeper than 256 levels", "number 1e400 is out of range").
struct JsonTextError {
  std::size_t byte = 0;
  std::string message;
};

// The text parsed, after the depth check; never throws.
[[nodiscard]] tl::expected<nlohmann::json, JsonTextError> parse_json_text(
    std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// 1-based line of a byte offset ("line 3").
[[nodiscard]] std::size_t line_of_offset(std::string_view text, std::size_t offset);

// Whether the bytes are well-formed UTF-8 (no overlong forms, surrogates or values past
// U+10FFFF): text that is not cannot be stored in a JSON document.
[[nodiscard]] bool valid_utf8(std::string_view text);

// At most max_bytes of the text, cut between characters, each invalid byte replaced by U+FFFD:
// what a message may quote of input that need not be UTF-8.
[[nodiscard]] std::string utf8_prefix(std::string_view text, std::size_t max_bytes);

// A JSON value as text for a message or a log line: invalid UTF-8 replaced, never throws.
[[nodiscard]] std::string printable_json(const nlohmann::json& value);

}  // namespace kernelwatch::core
