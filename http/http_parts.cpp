#include "http/http_parts.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace kernelwatch::http::parts {
namespace {

using core::ErrorCode;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> percent_decode(std::string_view in, PlusMeans plus) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      const int high = hex_value(in[i + 1]);
      const int low = hex_value(in[i + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      const char decoded = static_cast<char>(high * 16 + low);
      if (decoded == '\0') return std::nullopt;
      out.push_back(decoded);
      i += 2;
    } else if (c == '+' && plus == PlusMeans::Space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::optional<Target> parse_target(std::string_view raw) {
  if (raw.empty() || raw.front() != '/') return std::nullopt;  // origin-form only
  const std::size_t question = raw.find('?');
  const std::string_view raw_path = raw.substr(0, question);
  Target target;
  auto path = percent_decode(raw_path, PlusMeans::Plus);
  if (!path) return std::nullopt;
  target.path = std::move(*path);
  if (raw_path.size() > 1) {
    for (std::string_view segment : split(raw_path.substr(1), '/')) {
      auto decoded = percent_decode(segment, PlusMeans::Plus);
      if (!decoded) return std::nullopt;
      target.segments.push_back(std::move(*decoded));
    }
  }
  if (question != std::string_view::npos) {
    for (std::string_view pair : split(raw.substr(question + 1), '&')) {
      if (pair.empty()) continue;
      const std::size_t equals = pair.find('=');
      auto name = percent_decode(pair.substr(0, equals), PlusMeans::Space);
      auto value = percent_decode(
          equals == std::string_view::npos ? std::string_view{} : pair.substr(equals + 1),
          PlusMeans::Space);
      if (!name || !value) return std::nullopt;
      target.query.insert_or_assign(std::move(*name), std::move(*value));
    }
  }
  return target;
}

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || c == '\\') {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::optional<std::string_view> bearer_token(std::string_view header) {
  header = trim(header);
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || !iequals(header.substr(0, kScheme.size()), kScheme) ||
      (header[kScheme.size()] != ' ' && header[kScheme.size()] != '\t')) {
    return std::nullopt;
  }
  const std::string_view token = trim(header.substr(kScheme.size()));
  if (token.empty()) return std::nullopt;
  return token;
}

bool has_line_break(std::string_view text) {
  return text.find_first_of("\r\n") != text.npos;
}

core::Result<std::vector<Segment>> compile_pattern(const std::string& pattern) {
  if (pattern.empty() || pattern.front() != '/') {
    return core::fail(ErrorCode::InvalidArgument,
                      "route `" + pattern + "`: a pattern must start with '/'");
  }
  std::vector<Segment> segments;
  if (pattern.size() == 1) return segments;
  std::set<std::string> names;
  for (std::string_view part : split(std::string_view(pattern).substr(1), '/')) {
    if (part.empty()) {
      return core::fail(ErrorCode::InvalidArgument, "route `" + pattern + "`: empty path segment");
    }
    if (part.front() == '{') {
      if (part.size() < 3 || part.back() != '}' ||
          part.substr(1, part.size() - 2).find_first_of("{}") != std::string_view::npos) {
        return core::fail(ErrorCode::InvalidArgument,
                          "route `" + pattern + "`: a parameter must look like {name}");
      }
      std::string name(part.substr(1, part.size() - 2));
      if (!names.insert(name).second) {
        return core::fail(ErrorCode::InvalidArgument,
                          "route `" + pattern + "`: parameter {" + name + "} appears twice");
      }
      segments.push_back(Segment{std::move(name), true});
    } else {
      if (part.find_first_of("{}") != std::string_view::npos) {
        return core::fail(ErrorCode::InvalidArgument,
                          "route `" + pattern + "`: a parameter must fill a whole segment");
      }
      segments.push_back(Segment{std::string(part), false});
    }
  }
  return segments;
}

std::optional<std::map<std::string, std::string>> match(const std::vector<Segment>& pattern,
                                                        const std::vector<std::string>& path) {
  if (pattern.size() != path.size()) return std::nullopt;
  std::map<std::string, std::string> params;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i].parameter) {
      if (path[i].empty()) return std::nullopt;
      params.emplace(pattern[i].text, path[i]);
    } else if (pattern[i].text != path[i]) {
      return std::nullopt;
    }
  }
  return params;
}

bool valid_method(std::string_view method) {
  return !method.empty() &&
         std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

}  // namespace kernelwatch::http::parts
