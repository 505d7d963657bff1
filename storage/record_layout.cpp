#include "storage/detail/record_layout.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "core/time.hpp"
#include "storage/import_target.hpp"

namespace kernelwatch::storage::layout {
namespace {

using nlohmann::json;

// Where a leaf sits: object member names from the document's root; "[]" for an array element.
using Path = std::vector<std::string_view>;

bool at(const Path& path, std::initializer_list<std::string_view> expected) {
  return std::equal(path.begin(), path.end(), expected.begin(), expected.end());
}

enum class Column {
  None,
  Status,
  ObservedAt,
  Median,
  ExternalId,
  Name,
  ImplementationDigest,
  ImplementationVersion
};

// The label core::implementation_version() reads the version from: the first of these that the
// document's metadata.labels has as a string. The template keeps every label (placeholders are
// strings too), so it names the same one.
std::string_view version_label(const json& document) {
  if (!document.is_object()) return {};
  const auto metadata = document.find("metadata");
  if (metadata == document.end() || !metadata->is_object()) return {};
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return {};
  for (std::string_view name :
       {"implementation_version", "kernelwatch_version", "version", "liger_version"}) {
    const auto it = labels->find(name);
    if (it != labels->end() && it->is_string()) return name;
  }
  return {};
}

// The column a leaf of a run document comes from. Decided by the leaf's place and kind alone, so
// that the template (whose placeholders keep the kind) answers as the document did.
Column column_at(const Path& path, const json& leaf, std::string_view version) {
  if (leaf.is_string()) {
    if (at(path, {"spec", "status"})) return Column::Status;
    if (at(path, {"spec", "observedAt"})) return Column::ObservedAt;
    if (at(path, {"spec", "sourceNative", "externalId"})) return Column::ExternalId;
    if (at(path, {"metadata", "name"})) return Column::Name;
    if (at(path, {"spec", "implementationDigest"})) return Column::ImplementationDigest;
    if (!version.empty() && at(path, {"metadata", "labels", version})) {
      return Column::ImplementationVersion;
    }
  } else if (leaf.is_number_integer() && at(path, {"spec", "timing", "latencyNs", "median"})) {
    return Column::Median;
  }
  return Column::None;
}

// The shared rules of both kinds of document: a number anywhere is per run; a string is per run
// where `per_run_string` says so.
struct Rules {
  bool run_document = false;  // run documents have columns; raw sources do not
  bool (*per_run_string)(const Path& path) = nullptr;
  std::string_view version;  // the version's label (run documents)
};

bool run_string(const Path& path) {
  return at(path, {"metadata", "description"});
}

bool source_string(const Path& path) {
  return path.size() == 2 && path[0] == "row" && !template_source_column(path[1]);
}

json placeholder(const json& leaf) {
  if (leaf.is_string()) return "";
  if (leaf.is_number_float()) return 0.0;
  return 0;
}

json column_value(Column column, const RunColumns& columns) {
  switch (column) {
    case Column::Status:
      return columns.run_status;
    case Column::ObservedAt:
      return core::format_timestamp(
          core::Timestamp{std::chrono::nanoseconds{columns.observed_at_ns}});
    case Column::Median:
      return columns.median_ns.value_or(0);
    case Column::ExternalId:
      return columns.external_id;
    case Column::Name:
      return columns.name.value_or(std::string());
    case Column::ImplementationDigest:
      return columns.implementation_digest.value_or(std::string());
    case Column::ImplementationVersion:
      return columns.implementation_version.value_or(std::string());
    case Column::None:
      break;
  }
  return nullptr;
}

// Cuts `node` (the template being made) in place. False when a column leaf disagrees with its
// column: the document cannot be split against these columns.
bool cut(json& node, Path& path, const Rules& rules, RunColumns* columns, json& values) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      path.push_back(it.key());
      const bool ok = cut(it.value(), path, rules, columns, values);
      path.pop_back();
      if (!ok) return false;
    }
    return true;
  }
  if (node.is_array()) {
    for (auto& item : node) {
      path.push_back("[]");
      const bool ok = cut(item, path, rules, columns, values);
      path.pop_back();
      if (!ok) return false;
    }
    return true;
  }
  Column column = rules.run_document ? column_at(path, node, rules.version) : Column::None;
  json hole = placeholder(node);  // keeps the leaf's kind: fill() decides by it
  // A column leaf that disagrees with its column cannot be cut: the document does not split.
  if (column == Column::Name) {
    columns->name = node.get<std::string>();
  } else if (column == Column::Median) {
    if (!columns->median_ns || node != json(*columns->median_ns)) return false;
  } else if (column != Column::None) {
    if (node != column_value(column, *columns)) return false;
  } else if (node.is_number() || (node.is_string() && rules.per_run_string(path))) {
    values.push_back(std::move(node));
  } else {
    return true;
  }
  node = std::move(hole);
  return true;
}

// Fills the template's per-run leaves back in, in the order cut() took them.
core::Status fill(json& node, Path& path, const Rules& rules, const RunColumns* columns,
                  json& values, std::size_t& next) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      path.push_back(it.key());
      auto ok = fill(it.value(), path, rules, columns, values, next);
      path.pop_back();
      if (!ok) return ok;
    }
    return {};
  }
  if (node.is_array()) {
    for (auto& item : node) {
      path.push_back("[]");
      auto ok = fill(item, path, rules, columns, values, next);
      path.pop_back();
      if (!ok) return ok;
    }
    return {};
  }
  const Column column = rules.run_document ? column_at(path, node, rules.version) : Column::None;
  if (column != Column::None) {
    node = column_value(column, *columns);
  } else if (node.is_number() || (node.is_string() && rules.per_run_string(path))) {
    if (next >= values.size()) {
      return core::fail(core::ErrorCode::ParseError,
                        "stored run: fewer values than its template has places");
    }
    node = std::move(values[next++]);
  }
  return {};
}

// `node` with values cut out; nullopt when a column disagrees.
std::optional<SplitDocument> cut_document(json node, Rules rules, RunColumns* columns) {
  json values = json::array();
  Path path;
  if (rules.run_document) rules.version = version_label(node);
  if (!cut(node, path, rules, columns, values)) return std::nullopt;
  return SplitDocument{std::move(node), values.empty() ? std::string() : values.dump()};
}

core::Result<json> fill_document(json shape, std::string_view values_text, Rules rules,
                                 const RunColumns* columns) {
  if (rules.run_document) rules.version = version_label(shape);
  json values = json::array();
  if (!values_text.empty()) {
    values = json::parse(values_text, nullptr, /*allow_exceptions=*/false);
    if (!values.is_array()) {
      return core::fail(core::ErrorCode::ParseError, "stored run: its values are not a JSON array");
    }
  }
  Path path;
  std::size_t next = 0;
  KW_TRY(fill(shape, path, rules, columns, values, next));
  if (next != values.size()) {
    return core::fail(core::ErrorCode::ParseError,
                      "stored run: more values than its template has places");
  }
  return shape;
}

constexpr Rules kRunRules{true, run_string, {}};
constexpr Rules kSourceRules{false, source_string, {}};

}  // namespace

std::optional<SplitRecord> split_record(const json& record, RunColumns& columns) {
  if (!record.is_object()) return std::nullopt;
  SplitRecord out;
  json extra = json::object();
  for (auto it = record.begin(); it != record.end(); ++it) {
    const std::string& member = it.key();
    if (member == "run") {
      out.run = cut_document(it.value(), kRunRules, &columns);
      if (!out.run) return std::nullopt;
    } else if (member == "protocol") {
      out.protocol = it.value();
    } else if (member == "environment") {
      out.environment = it.value();
    } else if (member == "workload") {
      out.workload = it.value();
    } else if (member == "implementation") {
      out.implementation = it.value();
    } else {
      extra[member] = it.value();
    }
  }
  if (!extra.empty()) out.extra = std::move(extra);
  return out;
}

core::Result<json> join_run(json shape, std::string_view values, const RunColumns& columns) {
  return fill_document(std::move(shape), values, kRunRules, &columns);
}

SplitDocument split_source(const json& source) {
  auto split = cut_document(source, kSourceRules, nullptr);
  KW_ASSERT(split.has_value(), "a raw source has no columns to disagree with");
  return std::move(*split);
}

core::Result<json> join_source(json shape, std::string_view values) {
  return fill_document(std::move(shape), values, kSourceRules, nullptr);
}

}  // namespace kernelwatch::storage::layout

namespace kernelwatch::storage {

bool template_source_column(std::string_view name) {
  // Not liger_version: a key's rows of every release share one template.
  static constexpr std::array<std::string_view, 10> kKeyColumns = {
      "extra_benchmark_config_str",
      "gpu_name",
      "kernel_name",
      "kernel_operation_mode",
      "kernel_provider",
      "metric_name",
      "metric_unit",
      "x_label",
      "x_name",
      "x_value",
  };
  return std::find(kKeyColumns.begin(), kKeyColumns.end(), name) != kKeyColumns.end();
}

}  // namespace kernelwatch::storage
