// The HTTP server's text handling, apart from sockets: request targets (percent-decoding, path
// segments, the query), route patterns with {name} parameters, header words and the bearer
// token, and access-log lines that stay on one line. Plain C++ over core/; used by
// http_server.cpp (and its tests).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace kernelwatch::http::parts {

enum class PlusMeans { Plus, Space };

// Decodes %XX escapes; nullopt on a broken escape or an encoded NUL.
[[nodiscard]] std::optional<std::string> percent_decode(std::string_view in, PlusMeans plus);

struct Target {
  std::string path;                   // decoded
  std::vector<std::string> segments;  // decoded, split on the raw '/'
  std::map<std::string, std::string> query;
};

[[nodiscard]] std::vector<std::string_view> split(std::string_view text, char separator);
// An origin-form target ("/a/b?c=d"), decoded; nullopt when malformed.
[[nodiscard]] std::optional<Target> parse_target(std::string_view raw);
// Keeps access-log lines on one line whatever a client put in its path.
[[nodiscard]] std::string printable(std::string_view text);
[[nodiscard]] bool iequals(std::string_view a, std::string_view b);
[[nodiscard]] std::string_view trim(std::string_view text);
// The credentials of "Authorization: Bearer <token>", or nullopt when the header has another form.
[[nodiscard]] std::optional<std::string_view> bearer_token(std::string_view header);
[[nodiscard]] bool has_line_break(std::string_view text);

struct Segment {
  std::string text;
  bool parameter = false;
};

// A route pattern's segments; InvalidArgument naming the pattern when it is malformed.
[[nodiscard]] core::Result<std::vector<Segment>> compile_pattern(const std::string& pattern);
// The parameters when `path` matches `pattern`.
[[nodiscard]] std::optional<std::map<std::string, std::string>> match(
    const std::vector<Segment>& pattern, const std::vector<std::string>& path);
// Upper-case letters only ("GET").
[[nodiscard]] bool valid_method(std::string_view method);

}  // namespace kernelwatch::http::parts
