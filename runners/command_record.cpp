#include "runners/detail/command_record.hpp"

#include <algorithm>
#include <cmath>

#include "core/digest.hpp"
#include "core/key.hpp"
#include "runners/child_process.hpp"

namespace kernelwatch::runners::detail {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxName = 200;
constexpr std::size_t kMaxNotes = 1000;
constexpr std::size_t kMaxNativeName = 150;

// A document name the public schema accepts: ^[a-z0-9][a-z0-9._-]*$, at most 200 bytes.
std::string document_name(const std::string& text) {
  std::string out = core::slug(text);
  if (out.size() > kMaxName) out.resize(kMaxName);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? std::string("command") : out;
}

// A native name made fit for the second half of a benchmark label: readable, no '/'.
std::string native_part(const std::string& name) {
  std::string out = readable_line(name, kMaxNativeName);
  std::replace(out.begin(), out.end(), '/', '.');
  std::replace(out.begin(), out.end(), ' ', '_');
  return out.empty() ? std::string("unnamed") : out;
}

std::string provider_part(const std::string& text) {
  std::string out;
  for (const char c : readable_line(text, 100)) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ||
                      c == '-' || c == '_' || c == '.';
    out += keep ? lower : '-';
  }
  return out.empty() ? std::string("unknown") : out;
}

// The spec of the ExecutionEnvironment of the daemon's probe (the one place that follows the
// record vocabulary of the environment).
json environment_document(const ExecutionFacts& facts) {
  const HostIdentity& host = *facts.host;
  json spec = core::environment_identity(host.hardware)["spec"];
  if (host.memory_bytes > 0) spec["hardware"]["memoryBytes"] = host.memory_bytes;
  json software = json::object();
  if (!host.driver.empty()) software["driver"] = host.driver;
  spec["software"] = std::move(software);
  json variables = json::object();
  for (const auto& [name, value] : facts.entry->env) {
    if (changes_timing(name)) variables[name] = readable_line(value, 500);
  }
  if (!variables.empty()) spec["settings"] = {{"environmentVariables", std::move(variables)}};
  const std::string label = core::environment_label(host.hardware);
  return json{{"apiVersion", core::kApiVersion},
              {"kind", "ExecutionEnvironment"},
              {"metadata",
               {{"name", document_name("kernelwatch-" + label)},
                {"title",
                 readable_line(
                     "kernelwatch host \u00b7 " + host.hardware.product +
                         (host.hardware.form_factor.empty() ? "" : " " + host.hardware.form_factor),
                     200)}}},
              {"spec", std::move(spec)}};
}

json protocol_document(const ExecutionFacts& facts, const std::string& primary,
                       const std::vector<std::string>& settings, const std::string& note) {
  const CommandEntry& entry = *facts.entry;
  const std::string format(to_string(entry.format));
  std::string settings_text;
  for (const auto& s : settings) settings_text += (settings_text.empty() ? "" : " ") + s;
  const auto notes_with = [&](const std::string& command) {
    return "format " + format + "; command: " + command +
           (settings_text.empty() ? "" : "; run settings: " + settings_text) +
           (note.empty() ? "" : "; statistics: " + note);
  };
  std::string notes = notes_with(entry.command_line());
  if (notes.size() > kMaxNotes) {
    // A long command line is named by its digest (still a new key when any flag changes).
    const std::string digest = core::sha256_hex(entry.command_line()).substr(0, 32);
    notes = notes_with("sha256:" + digest + " of " + readable_line(entry.command_line(), 120));
  }
  json harness = {{"name", std::string(harness_of(entry.format))}};
  if (!facts.harness_version.empty()) {
    harness["version"] = readable_line(facts.harness_version, 100);
  }
  json spec = {
      {"harness", std::move(harness)},
      {"measurement", {{"timer", facts.timer}, {"primaryStatistic", primary}}},
      {"comparability", {{"family", "command"}, {"notes", readable_line(notes, kMaxNotes)}}}};
  return json{{"apiVersion", core::kApiVersion},
              {"kind", "BenchmarkProtocol"},
              {"metadata",
               {{"name", document_name("command-" + entry.name + "-" + format)},
                {"title", readable_line(entry.name + " \u00b7 " + format, 200)}}},
              {"spec", std::move(spec)}};
}

json latency(const std::string& statistic, double ns) {
  return json{{"metric", "latency"},
              {"statistic", statistic},
              {"unit", "ns"},
              {"value", static_cast<std::int64_t>(std::llround(ns))}};
}

// GPU samples taken while the program ran, as run metrics (numbers only).
void add_sample_metrics(const std::vector<kernels::GpuSample>& samples, json& metrics) {
  if (samples.empty()) return;
  metrics["gpu_samples"] = samples.size();
  std::optional<unsigned> low, high, max_clock, others;
  for (const auto& s : samples) {
    if (s.sm_clock_mhz) {
      low = std::min(low.value_or(*s.sm_clock_mhz), *s.sm_clock_mhz);
      high = std::max(high.value_or(0U), *s.sm_clock_mhz);
    }
    if (s.sm_clock_max_mhz) max_clock = *s.sm_clock_max_mhz;
    if (s.other_compute_processes) {
      others = std::max(others.value_or(0U), *s.other_compute_processes);
    }
  }
  if (low) metrics["gpu_sm_clock_mhz_min"] = *low;
  if (high) metrics["gpu_sm_clock_mhz_max"] = *high;
  if (max_clock) metrics["gpu_sm_clock_max_mhz"] = *max_clock;
  if (others) metrics["gpu_other_compute_processes_max"] = *others;
}

struct KeyParts {
  std::string benchmark;
  std::string provider;
  std::string workload;
};

// The run document around a spec's timing: names, labels, digests, the status and reason.
core::Result<core::Record> assemble(const ExecutionFacts& facts, const KeyParts& key,
                                             json protocol, json timing, json measurements,
                                             json metrics, const std::string& version,
                                             RunVerdict verdict, const std::string& reason) {
  const CommandEntry& entry = *facts.entry;
  const json environment = environment_document(facts);
  const std::string environment_label = core::environment_label(facts.host->hardware);
  const std::string stamp = core::format_id_timestamp(facts.observed);
  const core::Workload workload = KW_TRY(core::Workload::from_label(key.workload));
  json implementation = {{"entry", entry.name}, {"program", facts.program_digest}};
  if (!version.empty()) implementation["version"] = version;

  json spec = {{"observedAt", core::format_timestamp(facts.observed)}};
  const bool timed = verdict == RunVerdict::Passed || verdict == RunVerdict::Inconclusive;
  if (timed) {
    spec["timing"] = std::move(timing);
    if (!measurements.empty()) spec["measurements"] = std::move(measurements);
  }
  add_sample_metrics(facts.samples, metrics);
  spec["sourceNative"] = {
      {"source", std::string(kCommandSource)},
      {"benchmark", key.benchmark},
      {"externalId", readable_line(key.benchmark + "/" + key.provider + "/" + environment_label +
                                       "/" + key.workload + "/" + stamp,
                                   500)},
      {"metrics", std::move(metrics)}};
  spec["protocolDigest"] = core::document_digest(protocol);
  spec["workloadDigest"] = workload.digest();
  spec["environmentDigest"] = core::document_digest(environment);
  spec["implementationDigest"] = core::digest_of(implementation);
  json labels = {{"provider", key.provider},
                 {"workload", key.workload},
                 {"environment", environment_label},
                 {"runner", std::string(kCommandRunner)},
                 {"entry", entry.name},
                 {"format", std::string(to_string(entry.format))}};
  if (!version.empty()) labels["implementation_version"] = readable_line(version, 200);
  if (!facts.program_digest.empty()) labels["program_sha256"] = facts.program_digest;
  json record = {{"run",
                  {{"apiVersion", core::kApiVersion},
                   {"kind", "BenchmarkRun"},
                   {"metadata",
                    {{"name", document_name("command-" + entry.name + "-" + key.benchmark + "-" +
                                            key.workload + "-" + stamp)},
                     {"title", readable_line(key.benchmark + " \u00b7 " + key.provider, 200)},
                     {"labels", std::move(labels)}}},
                   {"spec", std::move(spec)}}},
                 {"protocol", std::move(protocol)},
                 {"environment", environment}};
  set_status(record, verdict, reason);
  return core::parse_record(record);  // its times are the record's
}

}  // namespace

std::string benchmark_label(const CommandEntry& entry, const std::string& native) {
  return entry.name + "/" + native_part(native);
}

std::string provider_label(const CommandEntry& entry, const std::string& native) {
  return provider_part(!entry.provider.empty() ? entry.provider
                       : !native.empty()       ? native
                                               : entry.name);
}

json command_protocol(const ExecutionFacts& facts, const NativeResult& result) {
  return protocol_document(facts, result.primary, result.settings, facts.statistics_note);
}

json failed_protocol(const ExecutionFacts& facts) {
  return protocol_document(facts, "median", {}, "");
}

core::Result<core::Record> result_run(const ExecutionFacts& facts,
                                               const NativeResult& result, RunVerdict verdict,
                                               const std::string& reason, KnownKey& key) {
  const CommandEntry& entry = *facts.entry;
  KeyParts parts;
  parts.benchmark = benchmark_label(entry, result.name);
  parts.provider = provider_label(entry, result.provider);
  parts.workload = result.workload.empty() ? workload_label(result.params) : result.workload;
  json protocol = command_protocol(facts, result);
  json timing = {{"primaryStatistic", result.primary},
                 {"latencyNs",
                  {{result.primary == "mean" ? "mean" : "median",
                    static_cast<std::int64_t>(std::llround(result.primary_ns))}}}};
  if (result.samples > 0) timing["samples"] = result.samples;
  json measurements = json::array();
  for (const auto& s : result.statistics) measurements.push_back(latency(s.name, s.ns));
  key = {parts.benchmark, parts.provider, parts.workload, protocol};
  return assemble(facts, parts, std::move(protocol), std::move(timing), std::move(measurements),
                  result.metrics, result.implementation_version, verdict, reason);
}

core::Result<core::Record> failed_run(const ExecutionFacts& facts, const KnownKey& key,
                                               RunVerdict verdict, const std::string& reason) {
  return assemble(facts, {key.benchmark, key.provider, key.workload}, key.protocol, json(),
                  json::array(), json::object(), "", verdict, reason);
}

core::Result<core::Record> printed_run(const ExecutionFacts& facts,
                                                const core::Record& printed, RunVerdict verdict,
                                                const std::string& reason, KnownKey& key) {
  const auto printed_key = KW_TRY(core::key_of(printed));
  json document = core::to_json(printed);
  document["environment"] = environment_document(facts);
  json& run = document["run"];
  run["spec"]["sourceNative"]["source"] = std::string(kCommandSource);
  run["spec"]["environmentDigest"] = core::document_digest(document["environment"]);
  json& labels = run["metadata"]["labels"];
  labels["entry"] = facts.entry->name;
  labels["runner"] = std::string(kCommandRunner);
  labels["format"] = std::string(to_string(facts.entry->format));
  labels["environment"] = core::environment_label(facts.host->hardware);
  if (verdict != RunVerdict::Failed || !core::is_failure(printed.run.status)) {
    set_status(document, verdict, reason);
  }
  key = {printed_key.benchmark.label, printed_key.provider.label, printed_key.workload.label,
         document["protocol"]};
  return core::parse_record(document);  // its times are the record's
}

}  // namespace kernelwatch::runners::detail
