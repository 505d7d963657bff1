#include "core/kernelindex_schema.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "core/detail/kernelindex_schemas.hpp"
#include "core/digest.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

// ---- The patterns the schemas use, each matched by hand (linear, no backtracking). ----

bool lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}
bool hex(char c) {
  return digit(c) || (c >= 'a' && c <= 'f');
}

// ^<first><rest>*$
bool first_then_rest(std::string_view s, bool (*first)(char), bool (*rest)(char)) {
  if (s.empty() || !first(s[0])) return false;
  for (char c : s.substr(1)) {
    if (!rest(c)) return false;
  }
  return true;
}

bool fixed_hex(std::string_view s, std::string_view prefix, std::size_t digits) {
  if (s.size() != prefix.size() + digits || s.substr(0, prefix.size()) != prefix) return false;
  for (char c : s.substr(prefix.size())) {
    if (!hex(c)) return false;
  }
  return true;
}

// ^\d+(\.\d+)?\s?(ns|us|µs|ms|s)$
bool duration_text(std::string_view s) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && digit(s[i])) ++i;
    return i > start;
  };
  if (!digits()) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\v' ||
                       s[i] == '\f' || s[i] == '\r')) {
    ++i;
  }
  const std::string_view unit = s.substr(i);
  return unit == "ns" || unit == "us" || unit == "\xc2\xb5s" || unit == "ms" || unit == "s";
}

int two_digits(std::string_view s, std::size_t at) {
  return (s[at] - '0') * 10 + (s[at + 1] - '0');
}

// The schemas' RFC 3339 pattern: a valid Gregorian date, 'T', hh:mm with optional :ss and
// optional fraction, and 'Z'.
bool date_time(std::string_view s) {
  if (s.size() < 17) return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15}) {
    if (!digit(s[i])) return false;
  }
  if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':') return false;
  const int year = two_digits(s, 0) * 100 + two_digits(s, 2);
  const int month = two_digits(s, 5);
  const int day = two_digits(s, 8);
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static constexpr std::array<int, 13> kDays = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  if (day > kDays[static_cast<std::size_t>(month)] && !(month == 2 && day == 29 && leap)) {
    return false;
  }
  if (two_digits(s, 11) > 23 || two_digits(s, 14) > 59) return false;
  std::size_t i = 16;
  if (s[i] == ':') {
    if (i + 2 >= s.size() || !digit(s[i + 1]) || !digit(s[i + 2]) || two_digits(s, i + 1) > 59) {
      return false;
    }
    i += 3;
    if (i < s.size() && s[i] == '.') {
      const std::size_t start = ++i;
      while (i < s.size() && digit(s[i])) ++i;
      if (i == start) return false;
    }
  }
  return i + 1 == s.size() && s[i] == 'Z';
}

struct PatternMatcher {
  std::string_view pattern;
  bool (*matches)(std::string_view);
};

const std::array<PatternMatcher, 7>& pattern_matchers() {
  static const std::array<PatternMatcher, 7> matchers = {{
      {"^[a-z][a-z0-9_]*$",
       [](std::string_view s) {
         return first_then_rest(s, lower, [](char c) { return lower(c) || digit(c) || c == '_'; });
       }},
      {"^[a-z0-9][a-z0-9._-]*$",
       [](std::string_view s) {
         return first_then_rest(
             s, [](char c) { return lower(c) || digit(c); },
             [](char c) { return lower(c) || digit(c) || c == '.' || c == '_' || c == '-'; });
       }},
      {"^[a-z0-9][a-z0-9-]*$",
       [](std::string_view s) {
         return first_then_rest(
             s, [](char c) { return lower(c) || digit(c); },
             [](char c) { return lower(c) || digit(c) || c == '-'; });
       }},
      {"^sha256:[0-9a-f]{64}$", [](std::string_view s) { return fixed_hex(s, "sha256:", 64); }},
      {"^[0-9a-f]{40}$", [](std::string_view s) { return fixed_hex(s, "", 40); }},
      {"^\\d+(\\.\\d+)?\\s?(ns|us|\xc2\xb5s|ms|s)$", duration_text},
      {"^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|"
       "\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|"
       "(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?"
       "(?:Z))$",
       date_time},
  }};
  return matchers;
}

const PatternMatcher* find_matcher(std::string_view pattern) {
  for (const auto& m : pattern_matchers()) {
    if (m.pattern == pattern) return &m;
  }
  return nullptr;
}

// ---- The schemas, parsed once. ----

const std::map<DocumentKind, json>& schemas() {
  static const std::map<DocumentKind, json> parsed = [] {
    std::map<DocumentKind, json> out;
    for (const auto& embedded : detail::embedded_schemas()) {
      auto kind = parse_document_kind(embedded.kind);
      KW_ASSERT(kind.has_value(), "the embedded schemas are the five kinds");
      out.emplace(*kind, json::parse(embedded.text));
    }
    return out;
  }();
  return parsed;
}

// Keywords that only annotate: nothing to check.
const std::set<std::string, std::less<>>& annotation_keywords() {
  static const std::set<std::string, std::less<>> keywords = {"$comment", "$id",    "$schema",
                                                              "title",    "format", "description"};
  return keywords;
}

const std::set<std::string, std::less<>>& checked_keywords() {
  static const std::set<std::string, std::less<>> keywords = {
      "type",      "properties", "required", "additionalProperties", "propertyNames", "pattern",
      "maxLength", "minItems",   "items",    "prefixItems",          "enum",          "const",
      "anyOf",     "minimum",    "maximum",  "exclusiveMinimum"};
  return keywords;
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

// A JSON number as a double, exact for every integer up to 2^53 (the schemas' bounds).
double number_value(const json& v) {
  if (v.is_number_unsigned()) return static_cast<double>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<double>(v.get<std::int64_t>());
  return v.get<double>();
}

bool is_type(const json& v, std::string_view type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    // JSON Schema counts 2.0 as an integer.
    if (v.is_number_integer()) return true;
    return v.is_number_float() && std::isfinite(v.get<double>()) &&
           std::floor(v.get<double>()) == v.get<double>();
  }
  if (type == "null") return v.is_null();
  return false;
}

std::string type_phrase(std::string_view type) {
  if (type == "object") return "an object";
  if (type == "array") return "an array";
  if (type == "integer") return "an integer";
  return "a " + std::string(type);
}

std::string shown(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string member_path(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

class Checker {
 public:
  explicit Checker(std::size_t limit) : limit_(limit) {}

  void check(const json& value, const json& schema, const std::string& path) {
    if (full()) return;
    if (const auto it = schema.find("type"); it != schema.end()) {
      const std::string& type = it->get_ref<const std::string&>();
      if (!is_type(value, type)) {
        add(path, "expected " + type_phrase(type) + ", got " + shown(value));
        return;
      }
    }
    if (const auto it = schema.find("const"); it != schema.end() && value != *it) {
      add(path, "must be " + shown(*it) + ", got " + shown(value));
      return;
    }
    if (const auto it = schema.find("enum"); it != schema.end()) {
      if (std::find(it->begin(), it->end(), value) == it->end()) {
        std::vector<std::string> names;
        for (const auto& allowed : *it) names.push_back(allowed.get<std::string>());
        add(path, shown(value) + " is not one of " + join(names, ", "));
        return;
      }
    }
    if (const auto it = schema.find("anyOf"); it != schema.end()) {
      check_any_of(value, *it, path);
      return;
    }
    if (value.is_string()) check_string(value.get_ref<const std::string&>(), schema, path);
    if (value.is_number()) check_number(value, schema, path);
    if (value.is_object()) check_object(value, schema, path);
    if (value.is_array()) check_array(value, schema, path);
  }

  [[nodiscard]] std::vector<SchemaViolation> take() { return std::move(violations_); }

 private:
  [[nodiscard]] bool full() const { return violations_.size() >= limit_; }

  void add(const std::string& path, std::string message) {
    if (!full()) violations_.push_back({path, std::move(message)});
  }

  void check_any_of(const json& value, const json& branches, const std::string& path) {
    std::vector<std::string> reasons;
    for (const auto& branch : branches) {
      Checker inner(1);
      inner.check(value, branch, path);
      auto found = inner.take();
      if (found.empty()) return;
      reasons.push_back(found.front().message);
    }
    add(path, "matches none of its allowed forms (" + join(reasons, "; ") + ")");
  }

  void check_string(const std::string& s, const json& schema, const std::string& path) {
    if (const auto it = schema.find("maxLength"); it != schema.end()) {
      const auto most = it->get<std::size_t>();
      const std::size_t length = code_points(s);
      if (length > most) {
        add(path, "is " + std::to_string(length) + " characters long, at most " +
                      std::to_string(most) + " are allowed");
        return;  // never match a pattern against an over-long text
      }
    }
    if (const auto it = schema.find("pattern"); it != schema.end()) {
      const std::string& pattern = it->get_ref<const std::string&>();
      const PatternMatcher* matcher = find_matcher(pattern);
      KW_ASSERT(matcher != nullptr, "unsupported_schema_features() lists every pattern");
      if (!matcher->matches(s)) add(path, shown(json(s)) + " does not match " + pattern);
    }
  }

  void check_number(const json& v, const json& schema, const std::string& path) {
    const double x = number_value(v);
    if (const auto it = schema.find("minimum"); it != schema.end() && x < number_value(*it)) {
      add(path, shown(v) + " is below the minimum " + shown(*it));
    }
    if (const auto it = schema.find("maximum"); it != schema.end() && x > number_value(*it)) {
      add(path, shown(v) + " is over the maximum " + shown(*it));
    }
    if (const auto it = schema.find("exclusiveMinimum");
        it != schema.end() && !(x > number_value(*it))) {
      add(path, shown(v) + " must be greater than " + shown(*it));
    }
  }

  void check_object(const json& v, const json& schema, const std::string& path) {
    const auto properties = schema.find("properties");
    if (const auto it = schema.find("required"); it != schema.end()) {
      for (const auto& name : *it) {
        if (!v.contains(name.get<std::string>())) {
          add(member_path(path, name.get<std::string>()), "missing (a required field)");
        }
      }
    }
    const auto names = schema.find("propertyNames");
    const auto additional = schema.find("additionalProperties");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& name = it.key();
      const std::string here = member_path(path, name);
      if (names != schema.end()) {
        Checker inner(1);
        inner.check(json(name), *names, here);
        if (auto found = inner.take(); !found.empty()) {
          add(here, "the name " + found.front().message);
          continue;
        }
      }
      if (properties != schema.end() && properties->contains(name)) {
        check(*it, properties->at(name), here);
      } else if (additional != schema.end()) {
        if (additional->is_boolean()) {
          if (!additional->get<bool>()) {
            std::vector<std::string> allowed;
            if (properties != schema.end()) {
              for (auto p = properties->begin(); p != properties->end(); ++p) {
                allowed.push_back(p.key());
              }
            }
            add(here, "is not a field of the schema" +
                          (allowed.empty() ? std::string()
                                           : " (allowed here: " + join(allowed, ", ") + ")"));
          }
        } else {
          check(*it, *additional, here);
        }
      }
      if (full()) return;
    }
  }

  void check_array(const json& v, const json& schema, const std::string& path) {
    if (const auto it = schema.find("minItems"); it != schema.end()) {
      if (v.size() < it->get<std::size_t>()) {
        add(path,
            "has " + std::to_string(v.size()) + " items, at least " + shown(*it) + " are required");
      }
    }
    std::size_t first_free = 0;
    if (const auto it = schema.find("prefixItems"); it != schema.end()) {
      for (std::size_t i = 0; i < it->size() && i < v.size(); ++i) {
        check(v[i], (*it)[i], path + "[" + std::to_string(i) + "]");
      }
      first_free = it->size();
    }
    if (const auto it = schema.find("items"); it != schema.end()) {
      for (std::size_t i = first_free; i < v.size() && !full(); ++i) {
        check(v[i], *it, path + "[" + std::to_string(i) + "]");
      }
    }
  }

  std::size_t limit_;
  std::vector<SchemaViolation> violations_;
};

void collect_unsupported(const json& schema, const std::string& path,
                         std::vector<std::string>& out) {
  if (!schema.is_object()) return;
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& keyword = it.key();
    const std::string here = path + "/" + keyword;
    if (annotation_keywords().contains(keyword)) continue;
    if (!checked_keywords().contains(keyword)) {
      out.push_back(here + ": keyword not supported");
      continue;
    }
    if (keyword == "type" && !it->is_string()) out.push_back(here + ": only one type supported");
    if (keyword == "pattern" && find_matcher(it->get<std::string>()) == nullptr) {
      out.push_back(here + ": pattern without a matcher: " + it->get<std::string>());
    }
    if (keyword == "properties") {
      for (auto p = it->begin(); p != it->end(); ++p) {
        collect_unsupported(*p, here + "/" + p.key(), out);
      }
    } else if (keyword == "anyOf" || keyword == "prefixItems") {
      for (std::size_t i = 0; i < it->size(); ++i) {
        collect_unsupported((*it)[i], here + "/" + std::to_string(i), out);
      }
    } else if (keyword == "additionalProperties" || keyword == "propertyNames" ||
               keyword == "items") {
      collect_unsupported(*it, here, out);
    }
  }
}

}  // namespace

std::string_view to_string(DocumentKind kind) noexcept {
  switch (kind) {
    case DocumentKind::BenchmarkRun:
      return "BenchmarkRun";
    case DocumentKind::BenchmarkProtocol:
      return "BenchmarkProtocol";
    case DocumentKind::ExecutionEnvironment:
      return "ExecutionEnvironment";
    case DocumentKind::WorkloadCase:
      return "WorkloadCase";
    case DocumentKind::ImplementationRevision:
      return "ImplementationRevision";
  }
  return "unknown";
}

Result<DocumentKind> parse_document_kind(std::string_view text) {
  for (DocumentKind kind : {DocumentKind::BenchmarkRun, DocumentKind::BenchmarkProtocol,
                            DocumentKind::ExecutionEnvironment, DocumentKind::WorkloadCase,
                            DocumentKind::ImplementationRevision}) {
    if (to_string(kind) == text) return kind;
  }
  return fail(ErrorCode::ParseError,
              "\"" + std::string(text) +
                  "\" is not a kernelindex v1alpha1 kind (BenchmarkRun, BenchmarkProtocol, "
                  "ExecutionEnvironment, WorkloadCase, ImplementationRevision)");
}

std::vector<SchemaViolation> schema_violations(const json& document, DocumentKind kind,
                                               std::size_t limit) {
  Checker checker(limit == 0 ? 1 : limit);
  checker.check(document, schemas().at(kind), "");
  return checker.take();
}

Status validate_document(const json& document, std::string_view path) {
  const std::string prefix = path.empty() ? std::string() : std::string(path) + ".";
  const std::string where = path.empty() ? std::string("document") : std::string(path);
  if (!document.is_object()) {
    return fail(ErrorCode::ParseError, where + ": expected a kernelindex document (an object)");
  }
  const auto kind_field = document.find("kind");
  if (kind_field == document.end() || !kind_field->is_string()) {
    return fail(ErrorCode::ParseError, prefix + "kind: missing (a required field)");
  }
  const DocumentKind kind =
      KW_TRY_WITH(parse_document_kind(kind_field->get<std::string>()), prefix + "kind");
  constexpr std::size_t kShown = 20;
  const auto found = schema_violations(document, kind, kShown);
  if (found.empty()) return {};
  const SchemaViolation& first = found.front();
  std::string message = (first.path.empty() ? where : prefix + first.path) + ": " + first.message;
  if (found.size() > 1) {
    message += " (and " + std::to_string(found.size() - 1) +
               (found.size() == kShown ? " or more" : "") + " more problem" +
               (found.size() == 2 ? "" : "s") + " against the " + std::string(to_string(kind)) +
               " schema)";
  }
  return fail(ErrorCode::ParseError, message);
}

std::string document_name(std::string_view text) {
  constexpr std::size_t kMaxName = 200;
  constexpr std::size_t kHashDigits = 16;
  std::string out;
  bool gap = false;
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool kept = lower(c) || digit(c) || c == '.' || c == '_' || c == '-';
    if (!kept) {
      gap = true;
      continue;
    }
    if (gap && !out.empty()) out += '-';
    gap = false;
    out += c;
  }
  while (!out.empty() && !lower(out[0]) && !digit(out[0])) out.erase(0, 1);
  if (out.empty()) out = "unnamed";
  if (out.size() > kMaxName) {
    out = out.substr(0, kMaxName - kHashDigits - 1) + "-" + sha256_hex(out).substr(0, kHashDigits);
  }
  return out;
}

std::vector<std::string> unsupported_schema_features() {
  std::vector<std::string> out;
  for (const auto& [kind, schema] : schemas()) {
    collect_unsupported(schema, std::string(to_string(kind)), out);
  }
  return out;
}

}  // namespace kernelwatch::core
