#include "core/record.hpp"

#include <cmath>

#include "core/json_fields.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

Status check_kind(const JsonField& doc, std::string_view kind) {
  const JsonField api = doc["apiVersion"];
  const std::string api_version = KW_TRY(api.string());
  if (api_version != kApiVersion) {
    return api.error("\"" + api_version + "\" is not " + std::string(kApiVersion));
  }
  const JsonField actual = doc["kind"];
  const std::string actual_kind = KW_TRY(actual.string());
  if (actual_kind != kind) {
    return actual.error("expected \"" + std::string(kind) + "\", got \"" + actual_kind + "\"");
  }
  return {};
}

// The document's apiVersion, kind and spec object.
Result<JsonField> spec_of(const JsonField& doc, std::string_view kind) {
  KW_TRY(doc.object());
  KW_TRY(check_kind(doc, kind));
  return doc["spec"].object();
}

Result<Metadata> parse_metadata(const JsonField& doc) {
  Metadata metadata;
  const JsonField node = doc["metadata"];
  if (!node.present()) return metadata;
  KW_TRY(node.object());
  metadata.name = KW_TRY(node["name"].string_or(""));
  metadata.title = KW_TRY(node["title"].string_or(""));
  if (const JsonField labels = node["labels"]; labels.present()) {
    KW_TRY(labels.object());
    for (const std::string& key : labels.keys()) {
      metadata.labels.emplace(key, KW_TRY(labels[key].string()));
    }
  }
  return metadata;
}

// parent[key] as an object: kept when it is one (unknown fields survive), replaced otherwise.
json& object_member(json& parent, const char* key) {
  json& member = parent[key];
  if (!member.is_object()) member = json::object();
  return member;
}

void write_metadata(json& doc, const Metadata& metadata) {
  json& out = object_member(doc, "metadata");
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

// A count of ns: a number first (so a word is "expected a number"), then a non-negative integer
// read exactly (nlohmann's int64, uint64 or double, never through a double when it is an
// integer) and at most kMaxLatencyNs, so that it is exact as a double too.
Result<std::int64_t> nanoseconds(const JsonField& field) {
  KW_TRY(field.number());
  const auto ns = field.integer();
  if (!ns || *ns < 0) return field.error("expected a non-negative integer number of ns");
  if (*ns > kMaxLatencyNs) {
    return field.error(std::to_string(*ns) +
                       " ns is over the largest latency kernelwatch stores (" +
                       std::to_string(kMaxLatencyNs) + " ns, 2^53, about 104 days)");
  }
  return *ns;
}

json number_json(double value) {
  if (std::floor(value) == value && std::fabs(value) < 9.0e15) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

// The latencyNs member that holds a run's compared value: its primary statistic's, "median"
// unless the primary statistic is "mean" (a harness that reports no median, like older nvbench).
std::string_view primary_member(const BenchmarkRun& run) {
  return run.primary_statistic == "mean" ? "mean" : "median";
}

// spec.timing with the latencyNs value of its primary statistic: required on a passed run,
// optional on the others.
Status parse_timing(const JsonField& spec, BenchmarkRun& run) {
  const bool passed = run.status == RunStatus::Passed;
  const JsonField timing = spec["timing"];
  if (!timing.present() && !passed) return {};
  KW_TRY(timing.object());
  const std::string primary = KW_TRY(timing["primaryStatistic"].string_or(""));
  if (!primary.empty()) run.primary_statistic = primary;
  const JsonField latency = timing["latencyNs"];
  if (!latency.present() && !passed) return {};
  KW_TRY(latency.object());
  if (const JsonField median = latency[primary_member(run)]; median.present() || passed) {
    run.median = std::chrono::nanoseconds{KW_TRY(nanoseconds(median))};
    // A passed run with a median of 0 ns measured nothing.
    if (passed && run.median->count() == 0) {
      return median.error("a passed run's median must be at least 1 ns, got 0");
    }
  }
  return {};
}

Result<std::vector<Measurement>> parse_measurements(const JsonField& field) {
  std::vector<Measurement> measurements;
  if (!field.present()) return measurements;
  for (const JsonField& item : KW_TRY(field.array())) {
    KW_TRY(item.object());
    Measurement measurement;
    measurement.metric = KW_TRY(item["metric"].string());
    measurement.statistic = KW_TRY(item["statistic"].string());
    measurement.unit = KW_TRY(item["unit"].string());
    measurement.value = KW_TRY(item["value"].number());
    if (measurement.unit == "ns") KW_TRY(nanoseconds(item["value"]));
    measurements.push_back(std::move(measurement));
  }
  return measurements;
}

Result<SourceNative> parse_source_native(const JsonField& field) {
  KW_TRY(field.object());
  SourceNative source;
  source.source = KW_TRY(field["source"].string_or(""));
  source.benchmark = KW_TRY(field["benchmark"].string());
  source.external_id = KW_TRY(field["externalId"].string());
  if (const JsonField metrics = field["metrics"]; metrics.present()) {
    KW_TRY(metrics.object());
    source.metrics = metrics.value();
  }
  return source;
}

Result<BenchmarkRun> parse_run(const JsonField& doc) {
  const JsonField spec = KW_TRY(spec_of(doc, "BenchmarkRun"));
  BenchmarkRun run;
  run.document = doc.value();
  run.status = KW_TRY(spec["status"].parsed(parse_run_status));
  run.observed_at = KW_TRY(spec["observedAt"].timestamp());
  KW_TRY(parse_timing(spec, run));
  run.measurements = KW_TRY(parse_measurements(spec["measurements"]));
  run.source_native = KW_TRY(parse_source_native(spec["sourceNative"]));
  for (auto [key, target] : {std::pair{"protocolDigest", &run.protocol_digest},
                             std::pair{"workloadDigest", &run.workload_digest},
                             std::pair{"environmentDigest", &run.environment_digest},
                             std::pair{"implementationDigest", &run.implementation_digest}}) {
    *target = KW_TRY(spec[key].string_or(""));
  }
  run.metadata = KW_TRY(parse_metadata(doc));
  return run;
}

Result<BenchmarkProtocol> parse_protocol(const JsonField& doc) {
  const JsonField spec = KW_TRY(spec_of(doc, "BenchmarkProtocol"));
  BenchmarkProtocol protocol;
  protocol.document = doc.value();
  protocol.spec = spec.value();
  protocol.metadata = KW_TRY(parse_metadata(doc));
  return protocol;
}

Result<ExecutionEnvironment> parse_environment(const JsonField& doc) {
  const JsonField spec = KW_TRY(spec_of(doc, "ExecutionEnvironment"));
  ExecutionEnvironment environment;
  environment.document = doc.value();
  const JsonField hardware = KW_TRY(spec["hardware"].object());
  Hardware& hw = environment.hardware;
  hw.vendor = KW_TRY(hardware["vendor"].string());
  hw.product = KW_TRY(hardware["product"].string());
  hw.form_factor = KW_TRY(hardware["formFactor"].string_or(""));
  hw.architecture = KW_TRY(hardware["architecture"].string_or(""));
  if (const JsonField software = spec["software"]; software.present()) {
    KW_TRY(software.object());
    environment.software = software.value();
  }
  environment.metadata = KW_TRY(parse_metadata(doc));
  return environment;
}

void set_or_erase(json& object, const char* key, const std::string& value) {
  if (value.empty()) {
    object.erase(key);
  } else {
    object[key] = value;
  }
}

// The measurements, each written over the item it was parsed from (unknown fields kept).
json measurements_json(const std::vector<Measurement>& measurements, const json& old) {
  json out = json::array();
  for (std::size_t i = 0; i < measurements.size(); ++i) {
    const Measurement& m = measurements[i];
    json item = (old.is_array() && i < old.size() && old[i].is_object()) ? old[i] : json::object();
    item["metric"] = m.metric;
    item["statistic"] = m.statistic;
    item["unit"] = m.unit;
    item["value"] = number_json(m.value);
    out.push_back(std::move(item));
  }
  return out;
}

// The kept document of each part with its typed fields written over it.
json run_json(const BenchmarkRun& run) {
  json run_doc = run.document.is_object() ? run.document : json::object();
  run_doc["apiVersion"] = kApiVersion;
  run_doc["kind"] = "BenchmarkRun";
  json& spec = object_member(run_doc, "spec");
  spec["status"] = to_string(run.status);
  spec["observedAt"] = format_timestamp(run.observed_at);
  if (run.median) {
    json& timing = object_member(spec, "timing");
    json& latency = object_member(timing, "latencyNs");
    latency[std::string(primary_member(run))] = run.median->count();
    timing["primaryStatistic"] = run.primary_statistic;
  }
  if (!run.measurements.empty() || spec.contains("measurements")) {
    spec["measurements"] = measurements_json(run.measurements, spec.value("measurements", json()));
  }
  json& source = object_member(spec, "sourceNative");
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
  return run_doc;
}

json protocol_json(const BenchmarkProtocol& protocol) {
  json doc = protocol.document.is_object() ? protocol.document : json::object();
  doc["apiVersion"] = kApiVersion;
  doc["kind"] = "BenchmarkProtocol";
  doc["spec"] = protocol.spec;
  write_metadata(doc, protocol.metadata);
  return doc;
}

json environment_json(const ExecutionEnvironment& env) {
  json doc = env.document.is_object() ? env.document : json::object();
  doc["apiVersion"] = kApiVersion;
  doc["kind"] = "ExecutionEnvironment";
  json& spec = object_member(doc, "spec");
  json& hardware = object_member(spec, "hardware");
  hardware["vendor"] = env.hardware.vendor;
  hardware["product"] = env.hardware.product;
  set_or_erase(hardware, "formFactor", env.hardware.form_factor);
  set_or_erase(hardware, "architecture", env.hardware.architecture);
  spec["software"] = env.software;
  write_metadata(doc, env.metadata);
  return doc;
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
  if (statistic == primary_member(*this) && median) return median;
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
  const JsonField doc(value);
  Record record;
  record.document = value;
  record.run = KW_TRY(parse_run(doc["run"]));
  record.protocol = KW_TRY(parse_protocol(doc["protocol"]));
  record.environment = KW_TRY(parse_environment(doc["environment"]));
  return record;
}

json to_json(const Record& record) {
  json out = record.document.is_object() ? record.document : json::object();
  out["run"] = run_json(record.run);
  out["protocol"] = protocol_json(record.protocol);
  out["environment"] = environment_json(record.environment);
  return out;
}

}  // namespace kernelwatch::core
