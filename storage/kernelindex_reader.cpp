#include "storage/kernelindex_reader.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/digest.hpp"
#include "core/json_limits.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/record.hpp"

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

SourceItem invalid(std::size_t line, std::string reason) {
  SourceItem item;
  item.line = line;
  item.kind = ItemKind::Invalid;
  item.reason = std::move(reason);
  return item;
}

// One JSON value of the input and the line it starts on.
struct Value {
  json value;
  std::size_t line = 0;
};

// A kernelindex document on its own ({apiVersion, kind, metadata, spec}) rather than a bundle
// ({run, protocol, environment}).
bool is_document(const json& value) {
  return value.is_object() && value.contains("kind") && !value.contains("run");
}

struct Referenced {
  const json* document = nullptr;
  std::size_t line = 0;
};

// The documents of a stream of separate documents, by their kernelindex digest; runs by order.
class DocumentSet {
 public:
  // Checks a document against its schema and files it; an invalid one is returned as an item.
  std::optional<SourceItem> add(const json& document, std::size_t line) {
    if (auto valid = core::validate_document(document); !valid) {
      return invalid(line, valid.error().message);
    }
    const std::string kind = document.at("kind").get<std::string>();
    if (kind == "BenchmarkRun") {
      runs_.push_back({&document, line});
    } else {
      by_digest_.emplace(core::document_digest(document), Referenced{&document, line});
    }
    return std::nullopt;
  }

  // Each run joined with the documents its digests name. A missing environment or protocol is
  // an invalid row naming the digest; a workload or implementation document is optional.
  void join(std::vector<std::pair<std::size_t, SourceItem>>& out) const {
    for (const Referenced& run : runs_) out.emplace_back(run.line, join_one(run));
  }

  [[nodiscard]] bool empty() const { return runs_.empty() && by_digest_.empty(); }
  [[nodiscard]] bool has_runs() const { return !runs_.empty(); }

 private:
  SourceItem join_one(const Referenced& run) const {
    const json& spec = run.document->at("spec");
    json bundle = {{"run", *run.document}};
    struct Reference {
      const char* field;
      const char* kind;
      const char* member;
      bool required;
    };
    static constexpr Reference kReferences[] = {
        {"environmentDigest", "ExecutionEnvironment", "environment", true},
        {"protocolDigest", "BenchmarkProtocol", "protocol", true},
        {"workloadDigest", "WorkloadCase", "workload", false},
        {"implementationDigest", "ImplementationRevision", "implementation", false},
    };
    for (const Reference& ref : kReferences) {
      const std::string digest = spec.value(ref.field, std::string());
      const auto it = by_digest_.find(digest);
      const bool found = it != by_digest_.end() && it->second.document->at("kind") == ref.kind;
      if (found) {
        bundle[ref.member] = *it->second.document;
      } else if (ref.required) {
        return invalid(run.line, std::string("spec.") + ref.field + ": the " + ref.kind + " " +
                                     digest + " is not in the input (documents are joined by " +
                                     "their kernelindex digest)");
      }
    }
    SourceItem item;
    item.line = run.line;
    auto record = core::parse_checked_record(bundle);
    if (!record) return invalid(run.line, record.error().message);
    item.record = std::move(*record);
    return item;
  }

  std::vector<Referenced> runs_;
  std::map<std::string, Referenced> by_digest_;
};

SourceItem to_item(const json& value, std::size_t line) {
  SourceItem item;
  item.line = line;
  auto record = core::parse_checked_record(value);
  if (!record) {
    item.kind = ItemKind::Invalid;
    item.reason = record.error().message;
    return item;
  }
  item.record = std::move(*record);
  return item;
}

// Bundles become items as they come; separate documents are joined once all are read, each run
// at the line it came from.
std::vector<SourceItem> items_of(const std::vector<Value>& values) {
  std::vector<std::pair<std::size_t, SourceItem>> ordered;
  DocumentSet documents;
  for (const Value& v : values) {
    if (is_document(v.value)) {
      if (auto bad = documents.add(v.value, v.line)) ordered.emplace_back(v.line, std::move(*bad));
    } else {
      ordered.emplace_back(v.line, to_item(v.value, v.line));
    }
  }
  documents.join(ordered);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SourceItem> items;
  items.reserve(ordered.size());
  for (auto& [line, item] : ordered) items.push_back(std::move(item));
  if (items.empty() && !documents.empty()) {
    items.push_back(invalid(1, "no BenchmarkRun among the documents (nothing to import)"));
  }
  return items;
}

}  // namespace

std::vector<SourceItem> read_kernelindex(std::string_view text) {
  std::vector<Value> values;
  // Nesting deeper than any record has is refused before anything parses it (the whole text,
  // then each line of JSON Lines).
  auto parsed = core::parse_json_text(text);
  if (!parsed) {
    const core::JsonTextError& whole_error = parsed.error();
    // JSON Lines: the first non-empty line must parse as an object on its own.
    std::vector<SourceItem> bad_lines;
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
          values.push_back({std::move(*value), line});
        } else {
          if (first)
            return {invalid(line_at(text, whole_error.byte), parse_error_text(whole_error))};
          bad_lines.push_back(invalid(line, parse_error_text(value.error())));
        }
        first = false;
      }
      start = end + 1;
      ++line;
    }
    if (values.empty() && bad_lines.empty()) return {invalid(1, "no records (the file is empty)")};
    std::vector<SourceItem> items = items_of(values);
    items.insert(items.end(), std::make_move_iterator(bad_lines.begin()),
                 std::make_move_iterator(bad_lines.end()));
    std::stable_sort(items.begin(), items.end(),
                     [](const SourceItem& a, const SourceItem& b) { return a.line < b.line; });
    return items;
  }
  json& whole = *parsed;
  if (whole.is_array()) {
    const auto offsets = array_element_offsets(text);
    for (std::size_t i = 0; i < whole.size(); ++i) {
      const std::size_t line = i < offsets.size() ? line_at(text, offsets[i]) : 1;
      values.push_back({std::move(whole[i]), line});
    }
    return items_of(values);
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  values.push_back({std::move(whole), line_at(text, first == std::string_view::npos ? 0 : first)});
  return items_of(values);
}

}  // namespace kernelwatch::storage
