#include "storage/liger_csv.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/digest.hpp"
#include "core/key.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;
using nlohmann::json;

constexpr const char* kRequired[] = {
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
};

// The protocol text of Liger's benchmark scripts per timed pass. The backward text is the
// founding fixture's, so a CSV row and its fixture share one protocol digest.
std::string protocol_notes(std::string_view pass) {
  const std::string tail =
      " via triton.testing.do_bench with quantiles 0.5/0.2/0.8 (median with p20/p80 spread). The "
      "upstream CSV records no CUDA, driver, or torch version; the Liger release rides each run's "
      "labels. Comparable only within one kernel, workload, timed pass, and GPU.";
  if (pass == "backward") {
    return "Timed: the backward pass of the module output given a random upstream gradient," + tail;
  }
  if (pass == "forward") return "Timed: the forward pass of the module," + tail;
  return "Timed: the forward pass and the backward pass of its output given a random upstream "
         "gradient, together," +
         tail;
}

json liger_protocol(std::string_view pass) {
  return json{
      {"apiVersion", core::kApiVersion},
      {"kind", "BenchmarkProtocol"},
      {"spec",
       {{"harness",
         {{"name", "Liger-Kernel benchmark scripts"},
          {"repository", "https://github.com/linkedin/Liger-Kernel"}}},
        {"measurement", {{"timer", "cuda_events"}, {"primaryStatistic", "median"}}},
        {"comparability", {{"notes", protocol_notes(pass)}, {"family", "liger_kernel_bench"}}}}},
      {"metadata",
       {{"name", "liger-bench-do-bench-" + std::string(pass)},
        {"title", "Liger benchmark harness \u00b7 " + std::string(pass) + " pass"}}}};
}

std::string kernel_title(std::string_view kernel) {
  if (kernel == "layer_norm") return "LayerNorm";
  if (kernel == "tvd") return "Total variation distance loss";
  return std::string(kernel);
}

std::optional<double> parse_double(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// A JSON number that must be a positive integer (M, B, T).
std::optional<std::int64_t> config_int(const json& config, const char* name) {
  const auto it = config.find(name);
  if (it == config.end() || !it->is_number_integer() || it->get<std::int64_t>() <= 0)
    return std::nullopt;
  return it->get<std::int64_t>();
}

class RowReader {
 public:
  RowReader(const std::map<std::string, std::size_t>& columns, const CsvRow& row)
      : columns_(columns), row_(row) {}
  [[nodiscard]] const std::string& operator[](const char* name) const {
    return row_.fields[columns_.at(name)];
  }

 private:
  const std::map<std::string, std::size_t>& columns_;
  const CsvRow& row_;
};

// Converts one speed row; returns the reason when the row is not valid.
core::Result<core::Record> speed_row_to_record(const RowReader& row) {
  const std::string& kernel = row["kernel_name"];
  const std::string& provider = row["kernel_provider"];
  const std::string& pass = row["kernel_operation_mode"];
  const auto bad = [](std::string why) {
    return core::fail(ErrorCode::ParseError, std::move(why));
  };

  if (kernel != "tvd" && kernel != "layer_norm") {
    return bad("kernel_name \"" + kernel + "\" is not one kernelwatch knows (tvd, layer_norm)");
  }
  if (pass != "forward" && pass != "backward" && pass != "full") {
    return bad("kernel_operation_mode \"" + pass + "\" is not forward, backward or full");
  }
  if (provider.empty() || core::slug(provider) != provider) {
    return bad("kernel_provider \"" + provider + "\" must be a lowercase name like liger or torch");
  }
  if (row["metric_unit"] != "ms") {
    return bad("metric_unit \"" + row["metric_unit"] + "\" for a speed row (expected ms)");
  }
  const auto x_value = parse_int(row["x_value"]);
  if (!x_value || *x_value <= 0)
    return bad("x_value \"" + row["x_value"] + "\" is not a positive integer");

  const json config = json::parse(row["extra_benchmark_config_str"], nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    return bad("extra_benchmark_config_str is not a JSON object: " +
               row["extra_benchmark_config_str"]);
  }
  core::DType dtype = core::DType::Fp32;
  if (const auto it = config.find("dtype"); it != config.end()) {
    if (!it->is_string()) return bad("extra_benchmark_config_str: dtype must be a string");
    auto parsed = core::parse_dtype(it->get<std::string>());
    if (!parsed) return bad("extra_benchmark_config_str: " + parsed.error().message);
    dtype = *parsed;
  }
  core::Workload workload;
  if (kernel == "layer_norm") {
    if (row["x_name"] != "N")
      return bad("x_name \"" + row["x_name"] + "\" for layer_norm (expected N, the hidden size)");
    const auto rows = config_int(config, "M");
    if (!rows) return bad("extra_benchmark_config_str: M (rows) must be a positive integer");
    double eps = 1e-6;
    if (const auto it = config.find("eps"); it != config.end()) {
      if (!it->is_number() || !(it->get<double>() > 0))
        return bad("extra_benchmark_config_str: eps must be a positive number");
      eps = it->get<double>();
    }
    workload = core::Workload::layer_norm(*rows, *x_value, dtype, eps);
  } else {
    if (row["x_name"] != "V")
      return bad("x_name \"" + row["x_name"] + "\" for tvd (expected V, the vocabulary)");
    const auto batch = config_int(config, "B");
    const auto time = config_int(config, "T");
    if (!batch || !time)
      return bad("extra_benchmark_config_str: B and T must be positive integers");
    workload = core::Workload::tvd(*batch * *time, *x_value, dtype);
  }

  std::optional<double> ms[3];
  const char* const value_columns[3] = {"y_value_20", "y_value_50", "y_value_80"};
  for (int i = 0; i < 3; ++i) {
    ms[i] = parse_double(row[value_columns[i]]);
    if (!ms[i] || *ms[i] <= 0) {
      return bad(std::string(value_columns[i]) + " \"" + row[value_columns[i]] +
                 "\" is not a positive number of ms");
    }
  }
  auto observed = core::parse_naive_timestamp(row["timestamp"]);
  if (!observed) return bad("timestamp: " + observed.error().message);
  const std::string& gpu = row["gpu_name"];
  if (gpu.empty()) return bad("gpu_name is empty");
  const core::Hardware hardware = core::hardware_from_gpu_name(gpu);
  const std::string environment = core::environment_label(hardware);
  const std::string benchmark = kernel + "/" + pass;
  const std::string id_time = core::format_id_timestamp(*observed);
  const std::string version = row["liger_version"];

  const auto to_ns = [](double value) {
    return static_cast<std::int64_t>(std::llround(value * 1e6));
  };
  const json protocol = liger_protocol(pass);
  const json environment_doc = {
      {"apiVersion", core::kApiVersion},
      {"kind", "ExecutionEnvironment"},
      {"spec", core::environment_identity(hardware)["spec"]},
      {"metadata",
       {{"name", "liger-bench-" + environment},
        {"title", "Liger benchmark host \u00b7 " +
                      (hardware.product.substr(hardware.product.find(' ') + 1) +
                       (hardware.form_factor.empty() ? "" : " " + hardware.form_factor))}}}};
  std::string kernel_slug = kernel;
  std::replace(kernel_slug.begin(), kernel_slug.end(), '_', '-');
  json labels = {{"liger_version", version}};
  const json run = {
      {"apiVersion", core::kApiVersion},
      {"kind", "BenchmarkRun"},
      {"spec",
       {{"status", "passed"},
        {"timing", {{"latencyNs", {{"median", to_ns(*ms[1])}}}, {"primaryStatistic", "median"}}},
        {"observedAt", core::format_timestamp(*observed)},
        {"measurements", json::array({{{"unit", "ns"},
                                       {"value", to_ns(*ms[0])},
                                       {"metric", "latency"},
                                       {"statistic", "p20"}},
                                      {{"unit", "ns"},
                                       {"value", to_ns(*ms[2])},
                                       {"metric", "latency"},
                                       {"statistic", "p80"}}})},
        {"sourceNative",
         {{"source", "liger-kernel-bench"},
          {"metrics", {{"ms_20", *ms[0]}, {"ms_50", *ms[1]}, {"ms_80", *ms[2]}}},
          {"benchmark", benchmark},
          {"externalId", benchmark + "/" + provider + "/" + environment + "/" + workload.label() +
                             "/" + id_time}}},
        {"protocolDigest", core::document_digest(protocol)},
        {"workloadDigest", workload.digest()},
        {"environmentDigest", core::document_digest(environment_doc)},
        {"implementationDigest",
         core::digest_of(json{
             {"provider", provider}, {"version", version}, {"source", "liger-kernel-bench"}})}}},
      {"metadata",
       {{"name", "liger-" + kernel_slug + "-" + pass + "-" + provider + "-" + environment + "-" +
                     workload.label() + "-" + id_time},
        {"title", kernel_title(kernel) + " \u00b7 " + provider + " \u00b7 " + pass},
        {"labels", std::move(labels)}}}};
  return core::parse_record(
      json{{"run", run}, {"protocol", protocol}, {"environment", environment_doc}});
}

}  // namespace

core::Result<std::vector<CsvRow>> parse_csv(std::string_view text) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  std::size_t line = 1;
  std::size_t quote_line = 0;
  bool in_quotes = false;
  bool row_started = false;
  row.line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_quotes = true;
        quote_line = line;
        row_started = true;
        break;
      case ',':
        row.fields.push_back(std::move(field));
        field.clear();
        row_started = true;
        break;
      case '\r':
        break;
      case '\n':
        if (row_started || !field.empty()) {
          row.fields.push_back(std::move(field));
          rows.push_back(std::move(row));
        }
        field.clear();
        row = CsvRow{};
        row_started = false;
        ++line;
        row.line = line;
        break;
      default:
        field += c;
        row_started = true;
        break;
    }
  }
  if (in_quotes) {
    return core::fail(ErrorCode::ParseError,
                      std::to_string(quote_line) + ": unterminated quoted field");
  }
  if (row_started || !field.empty()) {
    row.fields.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

core::Result<std::vector<SourceItem>> read_liger_csv(std::string_view text,
                                                     std::string_view file_name) {
  auto rows = parse_csv(text);
  if (!rows) return tl::unexpected(rows.error());
  if (rows->empty())
    return core::fail(ErrorCode::ParseError, "1: empty file, expected a header row");
  const CsvRow& header = rows->front();
  std::map<std::string, std::size_t> columns;
  for (std::size_t i = 0; i < header.fields.size(); ++i) columns.emplace(header.fields[i], i);
  for (const char* name : kRequired) {
    if (!columns.contains(name)) {
      return core::fail(ErrorCode::ParseError, std::to_string(header.line) + ": missing column \"" +
                                                   name + "\" in the header");
    }
  }
  std::vector<SourceItem> items;
  items.reserve(rows->size() - 1);
  for (std::size_t r = 1; r < rows->size(); ++r) {
    const CsvRow& row = (*rows)[r];
    SourceItem item;
    item.line = row.line;
    if (row.fields.size() != header.fields.size()) {
      item.kind = ItemKind::Invalid;
      item.reason = "expected " + std::to_string(header.fields.size()) + " columns, got " +
                    std::to_string(row.fields.size());
      items.push_back(std::move(item));
      continue;
    }
    const RowReader reader(columns, row);
    const std::string& metric = reader["metric_name"];
    if (metric == "memory") {
      item.kind = ItemKind::Skipped;
      item.reason = "memory row (kernelwatch stores latency only)";
      items.push_back(std::move(item));
      continue;
    }
    if (metric != "speed") {
      item.kind = ItemKind::Invalid;
      item.reason = "metric_name \"" + metric + "\" is not speed or memory";
      items.push_back(std::move(item));
      continue;
    }
    auto record = speed_row_to_record(reader);
    if (!record) {
      item.kind = ItemKind::Invalid;
      item.reason = record.error().message;
      items.push_back(std::move(item));
      continue;
    }
    item.record = std::move(*record);
    json source_row = json::object();
    for (std::size_t i = 0; i < header.fields.size(); ++i)
      source_row[header.fields[i]] = row.fields[i];
    item.raw = core::canonical_json(json{{"format", "liger-csv"},
                                         {"file", std::string(file_name)},
                                         {"line", row.line},
                                         {"row", std::move(source_row)}});
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace kernelwatch::storage
