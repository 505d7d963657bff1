#include "runners/liger_csv.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/digest.hpp"
#include "core/json_limits.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/key.hpp"
#include "core/record.hpp"
#include "runners/detail/liger_rows.hpp"

namespace kernelwatch::runners {
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
  if (pass == "no-grad-forward") {
    return "Timed: the forward pass of the module without autograd (torch.no_grad)," + tail;
  }
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

tl::unexpected<core::Error> bad(std::string why) {
  return core::fail(ErrorCode::ParseError, std::move(why));
}

using SpeedRow = LigerSpeedRow;

// A name Liger writes (kernel, provider): printable ASCII, no '/' or spaces, at most 100 bytes.
bool plain_name(std::string_view name) {
  if (name.empty() || name.size() > 100) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c > ' ' && c < 0x7f && c != '/' && c != '"' && c != '\\';
  });
}

// The kernel, timed pass, provider and unit of a speed row. Any kernel Liger benchmarks.
core::Status check_names(const RowReader& row) {
  const std::string& kernel = row["kernel_name"];
  const std::string& provider = row["kernel_provider"];
  const std::string& pass = row["kernel_operation_mode"];
  if (!plain_name(kernel)) {
    return bad("kernel_name \"" + kernel +
               "\" must be a name without spaces, '/' or quotes (like cross_entropy)");
  }
  if (pass != "forward" && pass != "backward" && pass != "full" && pass != "no-grad-forward") {
    return bad("kernel_operation_mode \"" + pass +
               "\" is not forward, backward, full or no-grad-forward");
  }
  const bool lowercase = std::all_of(provider.begin(), provider.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (provider.empty() || provider.size() > 100 || !lowercase) {
    return bad("kernel_provider \"" + provider +
               "\" must be a lowercase name like liger, torch or torch_compile");
  }
  if (row["metric_unit"] != "ms") {
    return bad("metric_unit \"" + row["metric_unit"] + "\" for a speed row (expected ms)");
  }
  return {};
}

// A label piece: lowercase, anything but [a-z0-9._-] becomes '_'.
std::string label_piece(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    const bool ok = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ||
                    lower == '.' || lower == '-' || lower == '_';
    out += ok ? lower : '_';
  }
  return out;
}

// Any other kernel's workload, readable and stable: "<x_name><x_value>", the dtype, then every
// other field of extra_benchmark_config_str in name order: a non-negative number as
// "<name><value>", anything else as "<name>_<value>" ("v4096-b8-t2048",
// "bt1024-bf16-bias_false-h4096-ignore_index_-100-mode_forward-v128256-...").
core::Result<core::Workload> generic_workload(std::string_view x_name, const std::string& x_value,
                                              const json& config,
                                              const std::optional<core::DType>& dtype) {
  if (x_value.empty() || x_value.size() > 32 || label_piece(x_value) != x_value) {
    return bad("x_value \"" + x_value + "\" is not a number or a short name");
  }
  std::string label = label_piece(x_name) + x_value;
  if (dtype) label += "-" + std::string(core::to_string(*dtype));
  std::map<std::string, std::string> rest;  // sorted by name
  for (const auto& [name, value] : config.items()) {
    if (name == "dtype") continue;
    const bool count = value.is_number() && !(value.get<double>() < 0);
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    rest[label_piece(name)] = count ? label_piece(text) : "_" + label_piece(text);
  }
  for (const auto& [name, value] : rest) label += "-" + name + value;
  constexpr std::size_t kLongest = 400;
  if (label.size() > kLongest) {
    return bad("the workload label from x_name, x_value and extra_benchmark_config_str is over " +
               std::to_string(kLongest) + " bytes");
  }
  return core::Workload::from_label(label);
}

}  // namespace

core::Result<core::Workload> liger_workload(std::string_view kernel, std::string_view x_name,
                                            const std::string& x_value,
                                            const std::string& config_text) {
  const auto parsed = core::parse_json_text(config_text);
  if (!parsed) {
    return bad("extra_benchmark_config_str is not a JSON object: " + parsed.error().message);
  }
  const json& config = *parsed;
  if (!config.is_object()) {
    return bad("extra_benchmark_config_str is not a JSON object: " + config_text);
  }
  std::optional<core::DType> given_dtype;
  if (const auto it = config.find("dtype"); it != config.end()) {
    if (!it->is_string()) return bad("extra_benchmark_config_str: dtype must be a string");
    auto parsed = core::parse_dtype(it->get<std::string>());
    if (!parsed) return bad("extra_benchmark_config_str: " + parsed.error().message);
    given_dtype = *parsed;
  }
  const bool own_form =
      (kernel == "layer_norm" && x_name == "N") || (kernel == "tvd" && x_name == "V");
  if (!own_form) return generic_workload(x_name, x_value, config, given_dtype);
  const core::DType dtype = given_dtype.value_or(core::DType::Fp32);
  const auto x = parse_int(x_value);
  if (!x || *x <= 0) return bad("x_value \"" + x_value + "\" is not a positive integer");
  if (kernel == "layer_norm") {
    const auto rows = config_int(config, "M");
    if (!rows) return bad("extra_benchmark_config_str: M (rows) must be a positive integer");
    double eps = 1e-6;
    if (const auto it = config.find("eps"); it != config.end()) {
      if (!it->is_number() || !(it->get<double>() > 0))
        return bad("extra_benchmark_config_str: eps must be a positive number");
      eps = it->get<double>();
    }
    return core::Workload::layer_norm(*rows, *x, dtype, eps);
  }
  const auto batch = config_int(config, "B");
  const auto time = config_int(config, "T");
  if (!batch || !time) return bad("extra_benchmark_config_str: B and T must be positive integers");
  return core::Workload::tvd(*batch * *time, *x, dtype);
}

namespace {

// p20, median and p80 in ms.
core::Result<std::array<double, 3>> latencies_ms(const RowReader& row) {
  std::array<double, 3> ms{};
  const char* const value_columns[3] = {"y_value_20", "y_value_50", "y_value_80"};
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const auto value = parse_double(row[value_columns[i]]);
    if (!value || *value <= 0) {
      return bad(std::string(value_columns[i]) + " \"" + row[value_columns[i]] +
                 "\" is not a positive number of ms");
    }
    // In integer ns: at least 1, at most what a record may carry (2^53 - 1 ns).
    if (*value * 1e6 < 0.5 || *value * 1e6 > static_cast<double>(core::kMaxLatencyNs)) {
      return bad(std::string(value_columns[i]) + " \"" + row[value_columns[i]] +
                 "\" ms is outside 1 ns to 2^53 - 1 ns");
    }
    ms[i] = *value;
  }
  return ms;
}

// Checks a speed row in column order of the checks: names, workload, latencies, time, GPU.
core::Result<SpeedRow> parse_speed_row(const RowReader& row) {
  KW_TRY(check_names(row));
  SpeedRow out;
  out.kernel = row["kernel_name"];
  out.pass = row["kernel_operation_mode"];
  out.provider = row["kernel_provider"];
  out.version = row["liger_version"];
  out.workload = KW_TRY(
      liger_workload(out.kernel, row["x_name"], row["x_value"], row["extra_benchmark_config_str"]));
  out.ms = KW_TRY(latencies_ms(row));
  auto observed = core::parse_naive_timestamp(row["timestamp"]);
  if (!observed) return bad("timestamp: " + observed.error().message);
  out.observed = *observed;
  const std::string& gpu = row["gpu_name"];
  if (gpu.empty()) return bad("gpu_name is empty");
  out.hardware = core::hardware_from_gpu_name(gpu);
  return out;
}

json liger_environment(const core::Hardware& hardware, const std::string& label) {
  return {{"apiVersion", core::kApiVersion},
          {"kind", "ExecutionEnvironment"},
          {"spec", core::environment_document_spec(hardware)},
          {"metadata",
           {{"name", "liger-bench-" + label},
            {"title", "Liger benchmark host \u00b7 " +
                          (hardware.product.substr(hardware.product.find(' ') + 1) +
                           (hardware.form_factor.empty() ? "" : " " + hardware.form_factor))}}}};
}

}  // namespace

std::string liger_implementation_digest(std::string_view provider, std::string_view version) {
  return core::digest_of(json{{"provider", std::string(provider)},
                              {"version", std::string(version)},
                              {"source", core::kLigerCiSource}});
}

core::Result<json> liger_speed_documents(const LigerSpeedRow& r) {
  const std::string environment = core::environment_label(r.hardware);
  const std::string benchmark = r.kernel + "/" + r.pass;
  const std::string id_time = core::format_id_timestamp(r.observed);
  const auto to_ns = [](double value) {
    return static_cast<std::int64_t>(std::llround(value * 1e6));
  };
  const json protocol = liger_protocol(r.pass);
  const json environment_doc = liger_environment(r.hardware, environment);
  const std::string kernel_slug = core::slug(r.kernel);
  json labels = {{"liger_version", r.version}};
  const json run = {
      {"apiVersion", core::kApiVersion},
      {"kind", "BenchmarkRun"},
      {"spec",
       {{"status", "passed"},
        {"timing", {{"latencyNs", {{"median", to_ns(r.ms[1])}}}, {"primaryStatistic", "median"}}},
        {"observedAt", core::format_timestamp(r.observed)},
        {"measurements", json::array({{{"unit", "ns"},
                                       {"value", to_ns(r.ms[0])},
                                       {"metric", "latency"},
                                       {"statistic", "p20"}},
                                      {{"unit", "ns"},
                                       {"value", to_ns(r.ms[2])},
                                       {"metric", "latency"},
                                       {"statistic", "p80"}}})},
        {"sourceNative",
         {{"source", core::kLigerCiSource},
          {"metrics", {{"ms_20", r.ms[0]}, {"ms_50", r.ms[1]}, {"ms_80", r.ms[2]}}},
          {"benchmark", benchmark},
          {"externalId", benchmark + "/" + r.provider + "/" + environment + "/" +
                             r.workload.label() + "/" + id_time}}},
        {"protocolDigest", core::document_digest(protocol)},
        {"workloadDigest", r.workload.digest()},
        {"environmentDigest", core::document_digest(environment_doc)},
        {"implementationDigest", liger_implementation_digest(r.provider, r.version)}}},
      {"metadata",
       {{"name",
         core::document_name("liger-" + kernel_slug + "-" + r.pass + "-" + core::slug(r.provider) +
                             "-" + environment + "-" + r.workload.label() + "-" + id_time)},
        {"title", kernel_title(r.kernel) + " \u00b7 " + r.provider + " \u00b7 " + r.pass},
        {"labels", std::move(labels)}}}};
  // What a row says (kernel, provider, GPU, version) may not fit the public schema (a name of
  // 300 characters): such a row is invalid, never a record no kernelindex tool would read.
  for (auto [member, document] : {std::pair{"run", &run}, std::pair{"protocol", &protocol},
                                  std::pair{"environment", &environment_doc}}) {
    KW_TRY_WITH(core::validate_document(*document, member),
                "the row makes no valid kernelindex record");
  }
  return json{{"run", run}, {"protocol", protocol}, {"environment", environment_doc}};
}

core::Result<core::Record> liger_speed_record(const LigerSpeedRow& r) {
  return core::parse_record(KW_TRY(liger_speed_documents(r)));
}

core::Result<LigerHeader> read_liger_header(const CsvRow& header) {
  if (!std::all_of(header.fields.begin(), header.fields.end(),
                   [](const std::string& f) { return core::valid_utf8(f); })) {
    return core::fail(ErrorCode::ParseError,
                      std::to_string(header.line) + ": the header is not valid UTF-8");
  }
  LigerHeader out;
  out.names = header.fields;
  for (std::size_t i = 0; i < header.fields.size(); ++i) out.columns.emplace(header.fields[i], i);
  for (const char* name : kRequired) {
    if (!out.columns.contains(name)) {
      return core::fail(ErrorCode::ParseError, std::to_string(header.line) + ": missing column \"" +
                                                   name + "\" in the header");
    }
  }
  return out;
}

namespace {

// What one data row is: checked for UTF-8 and its column count, then a memory row, an unknown
// metric or a speed row parsed.
LigerRowItem classify_row(const LigerHeader& header, const CsvRow& row) {
  LigerRowItem item;
  item.line = row.line;
  // Text that is not UTF-8 cannot enter a JSON record: the row is invalid, the import goes on.
  if (const auto bad_field =
          std::find_if(row.fields.begin(), row.fields.end(),
                       [](const std::string& f) { return !core::valid_utf8(f); });
      bad_field != row.fields.end()) {
    const auto column = static_cast<std::size_t>(bad_field - row.fields.begin());
    item.kind = storage::ItemKind::Invalid;
    item.reason = "column " + std::to_string(column + 1) +
                  (column < header.names.size() && core::valid_utf8(header.names[column])
                       ? " (" + header.names[column] + ")"
                       : std::string()) +
                  " is not valid UTF-8";
    return item;
  }
  if (row.fields.size() != header.names.size()) {
    item.kind = storage::ItemKind::Invalid;
    item.reason = "expected " + std::to_string(header.names.size()) + " columns, got " +
                  std::to_string(row.fields.size());
    return item;
  }
  const RowReader reader(header.columns, row);
  const std::string& metric = reader["metric_name"];
  if (metric == "memory") {
    item.kind = storage::ItemKind::Skipped;
    item.reason = "memory row (kernelwatch stores latency only)";
    return item;
  }
  if (metric != "speed") {
    item.kind = storage::ItemKind::Invalid;
    item.reason = "metric_name \"" + metric + "\" is not speed or memory";
    return item;
  }
  auto speed = parse_speed_row(reader);
  if (!speed) {
    item.kind = storage::ItemKind::Invalid;
    item.reason = speed.error().message;
    return item;
  }
  item.row = std::move(*speed);
  return item;
}

// The header and the data rows of a whole file.
core::Result<std::pair<LigerHeader, std::vector<CsvRow>>> header_and_rows(std::string_view text) {
  // A UTF-8 byte-order mark (Excel writes one) is not part of the first column's name.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<CsvRow> rows = KW_TRY(parse_csv(text));
  if (rows.empty())
    return core::fail(ErrorCode::ParseError, "1: empty file, expected a header row");
  LigerHeader header = KW_TRY(read_liger_header(rows.front()));
  rows.erase(rows.begin());
  return std::pair{std::move(header), std::move(rows)};
}

}  // namespace

storage::SourceItem liger_row_item(const LigerHeader& header, const CsvRow& row,
                                   std::string_view file_name) {
  LigerRowItem classified = classify_row(header, row);
  storage::SourceItem item;
  item.line = classified.line;
  item.kind = classified.kind;
  item.reason = std::move(classified.reason);
  if (item.kind != storage::ItemKind::Run) return item;
  auto record = liger_speed_record(classified.row);
  if (!record) {
    item.kind = storage::ItemKind::Invalid;
    item.reason = record.error().message;
    return item;
  }
  item.record = std::move(*record);
  json source_row = json::object();
  for (std::size_t i = 0; i < header.names.size(); ++i) source_row[header.names[i]] = row.fields[i];
  item.raw = core::canonical_json(json{{"format", "liger-csv"},
                                       {"file", std::string(file_name)},
                                       {"line", row.line},
                                       {"row", std::move(source_row)}});
  return item;
}

core::Result<std::vector<LigerRowItem>> read_liger_rows(std::string_view text) {
  const auto [header, rows] = KW_TRY(header_and_rows(text));
  std::vector<LigerRowItem> items;
  items.reserve(rows.size());
  for (const auto& row : rows) items.push_back(classify_row(header, row));
  return items;
}

core::Result<std::vector<storage::SourceItem>> read_liger_csv(std::string_view text,
                                                              std::string_view file_name) {
  const auto [header, rows] = KW_TRY(header_and_rows(text));
  std::vector<storage::SourceItem> items;
  items.reserve(rows.size());
  for (const auto& row : rows) items.push_back(liger_row_item(header, row, file_name));
  return items;
}

}  // namespace kernelwatch::runners
