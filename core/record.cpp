#include "core/record.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>

#include "core/digest.hpp"
#include "core/json_fields.hpp"
#include "core/json_limits.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/legacy_record.hpp"

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
  metadata.description = KW_TRY(node["description"].string_or(""));
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
  if (!metadata.description.empty())
    out["description"] = metadata.description;
  else
    out.erase("description");
  if (!metadata.labels.empty()) {
    out["labels"] = metadata.labels;
  } else {
    out.erase("labels");
  }
  if (out.empty()) doc.erase("metadata");
}

// A duration as the public schema also allows it: "12.5us", "3 ms", "1\u00b5s" (digits, an
// optional fraction, an optional space, ns|us|\u00b5s|ms|s), in ns rounded to the nearest;
// nullopt when the text is not one.
std::optional<double> duration_text_ns(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0) return std::nullopt;
  std::size_t end = i;
  if (end < text.size() && text[end] == '.') {
    std::size_t j = end + 1;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j == end + 1) return std::nullopt;
    end = j;
  }
  std::size_t unit_at = end;
  if (unit_at < text.size() && (text[unit_at] == ' ' || text[unit_at] == '\t')) ++unit_at;
  const std::string_view unit = text.substr(unit_at);
  double scale = 0;
  if (unit == "ns") scale = 1;
  if (unit == "us" || unit == "\xc2\xb5s") scale = 1e3;
  if (unit == "ms") scale = 1e6;
  if (unit == "s") scale = 1e9;
  if (scale == 0) return std::nullopt;
  return std::strtod(std::string(text.substr(0, end)).c_str(), nullptr) * scale;
}

// A count of ns: a number first (so a word is "expected a number"), then a non-negative integer
// read exactly (nlohmann's int64, uint64 or double, never through a double when it is an
// integer) and at most kMaxLatencyNs, so that it is exact as a double too. A duration text the
// public schema allows ("12.5us") is read as the nearest ns.
Result<std::int64_t> nanoseconds(const JsonField& field) {
  if (field.value().is_string()) {
    const auto ns = duration_text_ns(field.value().get_ref<const std::string&>());
    if (!ns) return field.error("expected an integer number of ns or a duration like \"12.5us\"");
    if (!(*ns <= static_cast<double>(kMaxLatencyNs))) {
      return field.error(
          "over the largest latency kernelwatch stores (2^53 - 1 ns, about 104 days)");
    }
    return std::llround(*ns);
  }
  KW_TRY(field.number());
  const auto ns = field.integer();
  if (!ns || *ns < 0) return field.error("expected a non-negative integer number of ns");
  if (*ns > kMaxLatencyNs) {
    return field.error(std::to_string(*ns) +
                       " ns is over the largest latency kernelwatch stores (" +
                       std::to_string(kMaxLatencyNs) + " ns, 2^53 - 1, about 104 days)");
  }
  return *ns;
}

json number_json(double value) {
  if (std::floor(value) == value && std::fabs(value) < 9.0e15) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

// spec.timing with its latencyNs.median: required on a passed run, optional on the others.
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
  if (const JsonField median = latency["median"]; median.present() || passed) {
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

// sourceNative is optional (a kernelindex tool's own runs have none); inside it only `source` is
// required by the schema, and kernelwatch reads benchmark and externalId where they are.
Result<SourceNative> parse_source_native(const JsonField& field) {
  SourceNative source;
  if (!field.present()) return source;
  KW_TRY(field.object());
  source.source = KW_TRY(field["source"].string_or(""));
  source.benchmark = KW_TRY(field["benchmark"].string_or(""));
  source.external_id = KW_TRY(field["externalId"].string_or(""));
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
  if (run.status != RunStatus::Passed) run.status_reason = run.metadata.description;
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
    latency["median"] = run.median->count();
    timing["primaryStatistic"] = run.primary_statistic;
  }
  if (!run.measurements.empty() || spec.contains("measurements")) {
    spec["measurements"] = measurements_json(run.measurements, spec.value("measurements", json()));
  }
  const SourceNative& native = run.source_native;
  if (native.source.empty() && native.benchmark.empty() && native.external_id.empty() &&
      native.metrics.empty() && !spec.contains("sourceNative")) {
    spec.erase("sourceNative");
  } else {
    json& source = object_member(spec, "sourceNative");
    set_or_erase(source, "source", native.source);
    set_or_erase(source, "benchmark", native.benchmark);
    set_or_erase(source, "externalId", native.external_id);
    if (!native.metrics.empty() || source.contains("metrics")) source["metrics"] = native.metrics;
  }
  set_or_erase(spec, "protocolDigest", run.protocol_digest);
  set_or_erase(spec, "workloadDigest", run.workload_digest);
  set_or_erase(spec, "environmentDigest", run.environment_digest);
  set_or_erase(spec, "implementationDigest", run.implementation_digest);
  Metadata metadata = run.metadata;
  if (run.status != RunStatus::Passed) {
    metadata.description = utf8_prefix(run.status_reason, kMaxStatusReasonBytes);
  }
  write_metadata(run_doc, metadata);
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
  hardware["architecture"] = env.hardware.architecture.empty() ? std::string(kUnknownArchitecture)
                                                               : env.hardware.architecture;
  spec["software"] = env.software;
  write_metadata(doc, env.metadata);
  return doc;
}

}  // namespace

namespace {

struct StatusName {
  RunStatus status;
  std::string_view name;
};

constexpr StatusName kStatusNames[] = {
    {RunStatus::Passed, "passed"},
    {RunStatus::IncorrectShape, "incorrect_shape"},
    {RunStatus::IncorrectDtype, "incorrect_dtype"},
    {RunStatus::IncorrectNumerical, "incorrect_numerical"},
    {RunStatus::CompileError, "compile_error"},
    {RunStatus::RuntimeError, "runtime_error"},
    {RunStatus::Timeout, "timeout"},
    {RunStatus::ResourceExceeded, "resource_exceeded"},
    {RunStatus::InvalidReference, "invalid_reference"},
    {RunStatus::PolicyViolation, "policy_violation"},
    {RunStatus::SuspectedRewardHack, "suspected_reward_hack"},
    {RunStatus::IncompleteEvidence, "incomplete_evidence"},
    {RunStatus::Revoked, "revoked"},
};

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

std::string_view to_string(RunStatus status) noexcept {
  for (const auto& entry : kStatusNames) {
    if (entry.status == status) return entry.name;
  }
  return "unknown";
}

std::string_view to_string(RunOutcome outcome) noexcept {
  switch (outcome) {
    case RunOutcome::Passed:
      return "passed";
    case RunOutcome::Failed:
      return "failed";
    case RunOutcome::Inconclusive:
      return "inconclusive";
  }
  return "unknown";
}

Result<RunStatus> parse_run_status(std::string_view text) {
  for (const auto& entry : kStatusNames) {
    if (entry.name == text) return entry.status;
  }
  std::string names;
  for (const auto& entry : kStatusNames) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return fail(ErrorCode::ParseError,
              "\"" + utf8_prefix(text, 60) + "\" is not a kernelindex run status (" + names + ")");
}

Result<RunOutcome> parse_run_outcome(std::string_view text) {
  for (RunOutcome outcome : {RunOutcome::Passed, RunOutcome::Failed, RunOutcome::Inconclusive}) {
    if (to_string(outcome) == text) return outcome;
  }
  return fail(ErrorCode::ParseError, "\"" + utf8_prefix(text, 60) +
                                         "\" is not a run outcome (passed, failed, inconclusive)");
}

RunOutcome outcome_of(RunStatus status) noexcept {
  switch (status) {
    case RunStatus::Passed:
      return RunOutcome::Passed;
    // Evidence that is incomplete or withdrawn says nothing about the kernel's speed.
    case RunStatus::IncompleteEvidence:
    case RunStatus::Revoked:
      return RunOutcome::Inconclusive;
    default:
      return RunOutcome::Failed;
  }
}

RunStatus status_for_error(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::OutOfMemory:
      return RunStatus::ResourceExceeded;
    default:
      return RunStatus::RuntimeError;
  }
}

RunStatus status_for_failure_reason(std::string_view reason) noexcept {
  if (contains(reason, "correctness")) return RunStatus::IncorrectNumerical;
  if (contains(reason, "after its timeout") || contains(reason, "timed out")) {
    return RunStatus::Timeout;
  }
  if (contains(reason, "out of memory") || contains(reason, "needs at least")) {
    return RunStatus::ResourceExceeded;
  }
  return RunStatus::RuntimeError;
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

namespace {

// A WorkloadCase or ImplementationRevision member: kept as it came (null when absent).
Result<json> optional_document(const JsonField& doc, std::string_view kind) {
  if (!doc.present()) return json();
  KW_TRY(spec_of(doc, kind));
  return doc.value();
}

Result<Record> parse_upgraded(const json& value) {
  const JsonField doc(value);
  Record record;
  record.document = value;
  record.run = KW_TRY(parse_run(doc["run"]));
  record.protocol = KW_TRY(parse_protocol(doc["protocol"]));
  record.environment = KW_TRY(parse_environment(doc["environment"]));
  record.workload = KW_TRY(optional_document(doc["workload"], "WorkloadCase"));
  record.implementation =
      KW_TRY(optional_document(doc["implementation"], "ImplementationRevision"));
  return record;
}

Status not_a_record(const json& value) {
  if (value.is_object()) return {};
  return fail(ErrorCode::ParseError,
              "record: expected an object with run, protocol and environment");
}

}  // namespace

Result<Record> parse_record(const json& value) {
  KW_TRY(not_a_record(value));
  if (!is_legacy_record(value)) return parse_upgraded(value);
  json upgraded = value;
  upgrade_legacy_record(upgraded);
  return parse_upgraded(upgraded);
}

Result<Record> parse_checked_record(const json& value) {
  KW_TRY(not_a_record(value));
  json upgraded = value;
  upgrade_legacy_record(upgraded);
  for (const char* member : {"run", "protocol", "environment"}) {
    if (!upgraded.contains(member)) {
      return fail(ErrorCode::ParseError,
                  std::string(member) + ": missing (a record has run, protocol and environment)");
    }
    KW_TRY(validate_document(upgraded.at(member), member));
  }
  for (const char* member : {"workload", "implementation"}) {  // optional
    const auto it = upgraded.find(member);
    if (it != upgraded.end() && !it->is_null()) KW_TRY(validate_document(*it, member));
  }
  // A digest the run carries for a document of the record must be that document's, as any
  // kernelindex tool that checks digests requires.
  for (auto [member, field] :
       {std::pair{"environment", "environmentDigest"}, std::pair{"protocol", "protocolDigest"},
        std::pair{"workload", "workloadDigest"},
        std::pair{"implementation", "implementationDigest"}}) {
    const auto it = upgraded.find(member);
    if (it == upgraded.end() || it->is_null()) continue;
    const std::string carried = string_at(upgraded, {"run", "spec", field});
    const std::string actual = document_digest(*it);
    if (carried != actual) {
      return fail(ErrorCode::ParseError, std::string("run.spec.") + field + ": " + carried +
                                             " is not the digest of the record's " + member + " (" +
                                             actual + ", SHA-256 of its RFC 8785 form)");
    }
  }
  return parse_upgraded(upgraded);
}

json to_json(const Record& record) {
  json out = record.document.is_object() ? record.document : json::object();
  out["run"] = run_json(record.run);
  out["protocol"] = protocol_json(record.protocol);
  out["environment"] = environment_json(record.environment);
  for (auto [member, document] : {std::pair{"workload", &record.workload},
                                  std::pair{"implementation", &record.implementation}}) {
    if (document->is_null()) {
      out.erase(member);
    } else {
      out[member] = *document;
    }
  }
  return out;
}

}  // namespace kernelwatch::core
