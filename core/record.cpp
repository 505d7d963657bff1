#include "core/record.hpp"

#include <cmath>
#include <limits>

namespace kernelwatch::core {
namespace {

using nlohmann::json;

// Walks a document and reports errors with the full field path.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[nodiscard]] const std::string& path() const { return path_; }

  Result<const json*> object(const json& parent, std::string_view key, bool required) const {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
      if (required) return fail(ErrorCode::ParseError, field(key) + ": missing");
      return static_cast<const json*>(nullptr);
    }
    if (!it->is_object()) return fail(ErrorCode::ParseError, field(key) + ": expected an object");
    return &*it;
  }

  Result<std::string> string(const json& parent, std::string_view key, bool required) const {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) {
      if (required) return fail(ErrorCode::ParseError, field(key) + ": missing");
      return std::string();
    }
    if (!it->is_string()) return fail(ErrorCode::ParseError, field(key) + ": expected a string");
    return it->get<std::string>();
  }

  Result<double> number(const json& parent, std::string_view key) const {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null())
      return fail(ErrorCode::ParseError, field(key) + ": missing");
    if (!it->is_number()) return fail(ErrorCode::ParseError, field(key) + ": expected a number");
    const double v = it->get<double>();
    if (!std::isfinite(v)) return fail(ErrorCode::ParseError, field(key) + ": not finite");
    return v;
  }

  [[nodiscard]] Reader child(std::string_view key) const {
    return Reader(path_.empty() ? std::string(key) : path_ + "." + std::string(key));
  }

  [[nodiscard]] std::string field(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

 private:
  std::string path_;
};

Status check_kind(const Reader& reader, const json& doc, std::string_view kind) {
  auto api = reader.string(doc, "apiVersion", true);
  if (!api) return tl::unexpected(api.error());
  if (*api != kApiVersion) {
    return fail(ErrorCode::ParseError, reader.field("apiVersion") + ": \"" + *api + "\" is not " +
                                           std::string(kApiVersion));
  }
  auto actual = reader.string(doc, "kind", true);
  if (!actual) return tl::unexpected(actual.error());
  if (*actual != kind) {
    return fail(ErrorCode::ParseError, reader.field("kind") + ": expected \"" + std::string(kind) +
                                           "\", got \"" + *actual + "\"");
  }
  return {};
}

Result<Metadata> parse_metadata(const Reader& parent, const json& doc) {
  Metadata metadata;
  auto node = parent.object(doc, "metadata", false);
  if (!node) return tl::unexpected(node.error());
  if (*node == nullptr) return metadata;
  const Reader reader = parent.child("metadata");
  auto name = reader.string(**node, "name", false);
  if (!name) return tl::unexpected(name.error());
  auto title = reader.string(**node, "title", false);
  if (!title) return tl::unexpected(title.error());
  metadata.name = *name;
  metadata.title = *title;
  auto labels = reader.object(**node, "labels", false);
  if (!labels) return tl::unexpected(labels.error());
  if (*labels != nullptr) {
    for (const auto& [key, value] : (*labels)->items()) {
      if (!value.is_string()) {
        return fail(ErrorCode::ParseError,
                    reader.field("labels") + "." + key + ": expected a string");
      }
      metadata.labels.emplace(key, value.get<std::string>());
    }
  }
  return metadata;
}

void write_metadata(json& doc, const Metadata& metadata) {
  json& out = doc["metadata"];
  if (!out.is_object()) out = json::object();
  if (!metadata.name.empty())
    out["name"] = metadata.name;
  else
    out.erase("name");
  if (!metadata.title.empty())
    out["title"] = metadata.title;
  else
    out.erase("title");
  if (!metadata.labels.empty()) {
    out["labels"] = metadata.labels;
  } else {
    out.erase("labels");
  }
  if (out.empty()) doc.erase("metadata");
}

Result<std::int64_t> to_ns(const Reader& reader, std::string_view key, double value) {
  if (value < 0 || value > static_cast<double>(std::numeric_limits<std::int64_t>::max()) ||
      std::floor(value) != value) {
    return fail(ErrorCode::ParseError,
                reader.field(key) + ": expected a non-negative integer number of ns");
  }
  return static_cast<std::int64_t>(value);
}

json number_json(double value) {
  if (std::floor(value) == value && std::fabs(value) < 9.0e15) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

Result<BenchmarkRun> parse_run(const json& doc) {
  const Reader top("run");
  if (!doc.is_object()) return fail(ErrorCode::ParseError, "run: expected an object");
  if (auto ok = check_kind(top, doc, "BenchmarkRun"); !ok) return tl::unexpected(ok.error());
  BenchmarkRun run;
  run.document = doc;
  auto spec_node = top.object(doc, "spec", true);
  if (!spec_node) return tl::unexpected(spec_node.error());
  const json& spec = **spec_node;
  const Reader reader = top.child("spec");

  auto status = reader.string(spec, "status", true);
  if (!status) return tl::unexpected(status.error());
  auto parsed_status = parse_run_status(*status);
  if (!parsed_status)
    return tl::unexpected(parsed_status.error().with_context(reader.field("status")));
  run.status = *parsed_status;

  auto observed = reader.string(spec, "observedAt", true);
  if (!observed) return tl::unexpected(observed.error());
  auto observed_at = parse_timestamp(*observed);
  if (!observed_at)
    return tl::unexpected(observed_at.error().with_context(reader.field("observedAt")));
  run.observed_at = *observed_at;

  auto timing = reader.object(spec, "timing", run.status == RunStatus::Passed);
  if (!timing) return tl::unexpected(timing.error());
  if (*timing != nullptr) {
    const Reader timing_reader = reader.child("timing");
    auto primary = timing_reader.string(**timing, "primaryStatistic", false);
    if (!primary) return tl::unexpected(primary.error());
    if (!primary->empty()) run.primary_statistic = *primary;
    auto latency = timing_reader.object(**timing, "latencyNs", run.status == RunStatus::Passed);
    if (!latency) return tl::unexpected(latency.error());
    if (*latency != nullptr) {
      const Reader latency_reader = timing_reader.child("latencyNs");
      if ((*latency)->contains("median") || run.status == RunStatus::Passed) {
        auto median = latency_reader.number(**latency, "median");
        if (!median) return tl::unexpected(median.error());
        auto ns = to_ns(latency_reader, "median", *median);
        if (!ns) return tl::unexpected(ns.error());
        run.median = std::chrono::nanoseconds{*ns};
      }
    }
  }

  if (const auto it = spec.find("measurements"); it != spec.end() && !it->is_null()) {
    if (!it->is_array())
      return fail(ErrorCode::ParseError, reader.field("measurements") + ": expected an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& item = (*it)[i];
      const Reader m(reader.field("measurements") + "[" + std::to_string(i) + "]");
      if (!item.is_object()) return fail(ErrorCode::ParseError, m.path() + ": expected an object");
      Measurement measurement;
      auto metric = m.string(item, "metric", true);
      if (!metric) return tl::unexpected(metric.error());
      auto statistic = m.string(item, "statistic", true);
      if (!statistic) return tl::unexpected(statistic.error());
      auto unit = m.string(item, "unit", true);
      if (!unit) return tl::unexpected(unit.error());
      auto value = m.number(item, "value");
      if (!value) return tl::unexpected(value.error());
      if (*unit == "ns") {
        if (auto ns = to_ns(m, "value", *value); !ns) return tl::unexpected(ns.error());
      }
      measurement.metric = *metric;
      measurement.statistic = *statistic;
      measurement.unit = *unit;
      measurement.value = *value;
      run.measurements.push_back(std::move(measurement));
    }
  }

  auto source_node = reader.object(spec, "sourceNative", true);
  if (!source_node) return tl::unexpected(source_node.error());
  const Reader source_reader = reader.child("sourceNative");
  auto source = source_reader.string(**source_node, "source", false);
  if (!source) return tl::unexpected(source.error());
  auto benchmark = source_reader.string(**source_node, "benchmark", true);
  if (!benchmark) return tl::unexpected(benchmark.error());
  auto external_id = source_reader.string(**source_node, "externalId", true);
  if (!external_id) return tl::unexpected(external_id.error());
  run.source_native.source = *source;
  run.source_native.benchmark = *benchmark;
  run.source_native.external_id = *external_id;
  if (const auto it = (*source_node)->find("metrics");
      it != (*source_node)->end() && !it->is_null()) {
    if (!it->is_object())
      return fail(ErrorCode::ParseError, source_reader.field("metrics") + ": expected an object");
    run.source_native.metrics = *it;
  }

  for (auto [key, target] : {std::pair{"protocolDigest", &run.protocol_digest},
                             std::pair{"workloadDigest", &run.workload_digest},
                             std::pair{"environmentDigest", &run.environment_digest},
                             std::pair{"implementationDigest", &run.implementation_digest}}) {
    auto value = reader.string(spec, key, false);
    if (!value) return tl::unexpected(value.error());
    *target = *value;
  }

  auto metadata = parse_metadata(top, doc);
  if (!metadata) return tl::unexpected(metadata.error());
  run.metadata = std::move(*metadata);
  return run;
}

Result<BenchmarkProtocol> parse_protocol(const json& doc) {
  const Reader top("protocol");
  if (!doc.is_object()) return fail(ErrorCode::ParseError, "protocol: expected an object");
  if (auto ok = check_kind(top, doc, "BenchmarkProtocol"); !ok) return tl::unexpected(ok.error());
  BenchmarkProtocol protocol;
  protocol.document = doc;
  auto spec = top.object(doc, "spec", true);
  if (!spec) return tl::unexpected(spec.error());
  protocol.spec = **spec;
  auto metadata = parse_metadata(top, doc);
  if (!metadata) return tl::unexpected(metadata.error());
  protocol.metadata = std::move(*metadata);
  return protocol;
}

Result<ExecutionEnvironment> parse_environment(const json& doc) {
  const Reader top("environment");
  if (!doc.is_object()) return fail(ErrorCode::ParseError, "environment: expected an object");
  if (auto ok = check_kind(top, doc, "ExecutionEnvironment"); !ok)
    return tl::unexpected(ok.error());
  ExecutionEnvironment environment;
  environment.document = doc;
  auto spec = top.object(doc, "spec", true);
  if (!spec) return tl::unexpected(spec.error());
  const Reader reader = top.child("spec");
  auto hardware = reader.object(**spec, "hardware", true);
  if (!hardware) return tl::unexpected(hardware.error());
  const Reader hw = reader.child("hardware");
  for (auto [key, target] : {std::pair{"vendor", &environment.hardware.vendor},
                             std::pair{"product", &environment.hardware.product},
                             std::pair{"formFactor", &environment.hardware.form_factor},
                             std::pair{"architecture", &environment.hardware.architecture}}) {
    auto value = hw.string(**hardware, key,
                           std::string_view(key) == "vendor" || std::string_view(key) == "product");
    if (!value) return tl::unexpected(value.error());
    *target = *value;
  }
  auto software = reader.object(**spec, "software", false);
  if (!software) return tl::unexpected(software.error());
  if (*software != nullptr) environment.software = **software;
  auto metadata = parse_metadata(top, doc);
  if (!metadata) return tl::unexpected(metadata.error());
  environment.metadata = std::move(*metadata);
  return environment;
}

void set_or_erase(json& object, const char* key, const std::string& value) {
  if (value.empty()) {
    object.erase(key);
  } else {
    object[key] = value;
  }
}

}  // namespace

std::string_view to_string(RunStatus status) noexcept {
  switch (status) {
    case RunStatus::Passed:
      return "passed";
    case RunStatus::Failed:
      return "failed";
    case RunStatus::Inconclusive:
      return "inconclusive";
  }
  return "unknown";
}

Result<RunStatus> parse_run_status(std::string_view text) {
  if (text == "passed") return RunStatus::Passed;
  if (text == "failed") return RunStatus::Failed;
  if (text == "inconclusive") return RunStatus::Inconclusive;
  return fail(ErrorCode::ParseError,
              "\"" + std::string(text) + "\" is not a run status (passed, failed, inconclusive)");
}

std::optional<std::chrono::nanoseconds> BenchmarkRun::latency(std::string_view statistic) const {
  if (statistic == "median" && median) return median;
  for (const auto& m : measurements) {
    if (m.metric == "latency" && m.statistic == statistic && m.unit == "ns") {
      return std::chrono::nanoseconds{static_cast<std::int64_t>(m.value)};
    }
  }
  return std::nullopt;
}

std::string implementation_version(const Metadata& metadata) {
  for (const char* name :
       {"implementation_version", "kernelwatch_version", "version", "liger_version"}) {
    if (auto it = metadata.labels.find(name); it != metadata.labels.end()) return it->second;
  }
  return {};
}

Result<Record> parse_record(const json& value) {
  if (!value.is_object())
    return fail(ErrorCode::ParseError,
                "record: expected an object with run, protocol and environment");
  Record record;
  record.document = value;
  const auto run_it = value.find("run");
  if (run_it == value.end()) return fail(ErrorCode::ParseError, "run: missing");
  auto run = parse_run(*run_it);
  if (!run) return tl::unexpected(run.error());
  record.run = std::move(*run);
  const auto protocol_it = value.find("protocol");
  if (protocol_it == value.end()) return fail(ErrorCode::ParseError, "protocol: missing");
  auto protocol = parse_protocol(*protocol_it);
  if (!protocol) return tl::unexpected(protocol.error());
  record.protocol = std::move(*protocol);
  const auto environment_it = value.find("environment");
  if (environment_it == value.end()) return fail(ErrorCode::ParseError, "environment: missing");
  auto environment = parse_environment(*environment_it);
  if (!environment) return tl::unexpected(environment.error());
  record.environment = std::move(*environment);
  return record;
}

json to_json(const Record& record) {
  const BenchmarkRun& run = record.run;
  json run_doc = run.document.is_object() ? run.document : json::object();
  run_doc["apiVersion"] = kApiVersion;
  run_doc["kind"] = "BenchmarkRun";
  json& spec = run_doc["spec"];
  if (!spec.is_object()) spec = json::object();
  spec["status"] = to_string(run.status);
  spec["observedAt"] = format_timestamp(run.observed_at);
  if (run.median) {
    json& timing = spec["timing"];
    if (!timing.is_object()) timing = json::object();
    json& latency = timing["latencyNs"];
    if (!latency.is_object()) latency = json::object();
    latency["median"] = run.median->count();
    timing["primaryStatistic"] = run.primary_statistic;
  }
  if (!run.measurements.empty() || spec.contains("measurements")) {
    json measurements = json::array();
    const json* old = spec.contains("measurements") && spec["measurements"].is_array()
                          ? &spec["measurements"]
                          : nullptr;
    for (std::size_t i = 0; i < run.measurements.size(); ++i) {
      const Measurement& m = run.measurements[i];
      json item =
          (old != nullptr && i < old->size() && (*old)[i].is_object()) ? (*old)[i] : json::object();
      item["metric"] = m.metric;
      item["statistic"] = m.statistic;
      item["unit"] = m.unit;
      item["value"] = number_json(m.value);
      measurements.push_back(std::move(item));
    }
    spec["measurements"] = std::move(measurements);
  }
  json& source = spec["sourceNative"];
  if (!source.is_object()) source = json::object();
  set_or_erase(source, "source", run.source_native.source);
  source["benchmark"] = run.source_native.benchmark;
  source["externalId"] = run.source_native.external_id;
  if (!run.source_native.metrics.empty() || source.contains("metrics")) {
    source["metrics"] = run.source_native.metrics;
  }
  set_or_erase(spec, "protocolDigest", run.protocol_digest);
  set_or_erase(spec, "workloadDigest", run.workload_digest);
  set_or_erase(spec, "environmentDigest", run.environment_digest);
  set_or_erase(spec, "implementationDigest", run.implementation_digest);
  write_metadata(run_doc, run.metadata);

  json protocol_doc =
      record.protocol.document.is_object() ? record.protocol.document : json::object();
  protocol_doc["apiVersion"] = kApiVersion;
  protocol_doc["kind"] = "BenchmarkProtocol";
  protocol_doc["spec"] = record.protocol.spec;
  write_metadata(protocol_doc, record.protocol.metadata);

  const ExecutionEnvironment& env = record.environment;
  json env_doc = env.document.is_object() ? env.document : json::object();
  env_doc["apiVersion"] = kApiVersion;
  env_doc["kind"] = "ExecutionEnvironment";
  json& env_spec = env_doc["spec"];
  if (!env_spec.is_object()) env_spec = json::object();
  json& hardware = env_spec["hardware"];
  if (!hardware.is_object()) hardware = json::object();
  hardware["vendor"] = env.hardware.vendor;
  hardware["product"] = env.hardware.product;
  set_or_erase(hardware, "formFactor", env.hardware.form_factor);
  set_or_erase(hardware, "architecture", env.hardware.architecture);
  env_spec["software"] = env.software;
  write_metadata(env_doc, env.metadata);

  json out = record.document.is_object() ? record.document : json::object();
  out["run"] = std::move(run_doc);
  out["protocol"] = std::move(protocol_doc);
  out["environment"] = std::move(env_doc);
  return out;
}

}  // namespace kernelwatch::core
