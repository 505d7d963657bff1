#include "core/legacy_record.hpp"

#include <set>

#include "core/digest.hpp"
#include "core/json_limits.hpp"
#include "core/kernelwatch_protocol.hpp"
#include "core/record.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

// The sources whose records kernelwatch itself wrote in the old forms: the two that existed in
// 0.1.0 (the harness and liger-bench). A closed list, not the catalogue of run sources
// (runners/sources.hpp): sources added since write only the current forms, so a new source never
// joins it.
bool own_source(const json& run) {
  const json* source = nullptr;
  if (const auto spec = run.find("spec"); spec != run.end() && spec->is_object()) {
    if (const auto native = spec->find("sourceNative");
        native != spec->end() && native->is_object()) {
      if (const auto it = native->find("source"); it != native->end()) source = &*it;
    }
  }
  return source != nullptr && source->is_string() &&
         (*source == "kernelwatch" || *source == "kernelwatch-liger-bench");
}

json* object_at(json& parent, const char* name) {
  if (!parent.is_object()) return nullptr;
  const auto it = parent.find(name);
  return it != parent.end() && it->is_object() ? &*it : nullptr;
}

const json* object_at(const json& parent, const char* name) {
  if (!parent.is_object()) return nullptr;
  const auto it = parent.find(name);
  return it != parent.end() && it->is_object() ? &*it : nullptr;
}

// Software fields the public schema has.
const std::set<std::string, std::less<>>& schema_software_fields() {
  static const std::set<std::string, std::less<>> fields = {
      "operatingSystem", "kernel", "driver", "cudaToolkit", "compiler", "framework", "libraries"};
  return fields;
}

bool legacy_metrics(const json& metrics) {
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (!it->is_number() || snake_case(it.key()) != it.key()) return true;
  }
  return false;
}

bool legacy_own_parts(const json& record) {
  const json* run_spec = object_at(record.at("run"), "spec");
  if (run_spec == nullptr) return false;
  if (const json* native = object_at(*run_spec, "sourceNative")) {
    if (const json* metrics = object_at(*native, "metrics"); metrics && legacy_metrics(*metrics)) {
      return true;
    }
  }
  if (const auto m = run_spec->find("measurements"); m != run_spec->end() && m->is_array()) {
    for (const auto& item : *m) {
      if (item.is_object() && item.value("unit", json()) == "1") return true;
    }
  }
  if (const json* env = object_at(record, "environment")) {
    if (const json* spec = object_at(*env, "spec")) {
      if (const json* software = object_at(*spec, "software")) {
        for (auto it = software->begin(); it != software->end(); ++it) {
          if (!schema_software_fields().contains(it.key())) return true;
        }
      }
    }
  }
  if (const json* protocol = object_at(record, "protocol")) {
    if (const json* spec = object_at(*protocol, "spec"); spec && spec->contains("timedPass")) {
      return true;
    }
  }
  return false;
}

// A GPU sample of the old environment ({"smClockMHz": 1980, ...}) as run metrics with a suffix.
void sample_metrics(const json& sample, std::string_view suffix, json& metrics) {
  if (!sample.is_object()) return;
  for (auto it = sample.begin(); it != sample.end(); ++it) {
    const std::string name = snake_case(it.key()) + "_" + std::string(suffix);
    if (it->is_boolean()) {
      metrics[name] = it->get<bool>() ? 1 : 0;
    } else if (it->is_number()) {
      metrics[name] = *it;
    }
  }
}

// A version as the schema's software strings hold it (at most 100 characters); "" for none.
std::string version_text(const json& value) {
  if (value.is_null()) return {};
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  return utf8_prefix(text, 100);
}

void upgrade_status(json& run) {
  json* spec = object_at(run, "spec");
  if (spec == nullptr) return;
  std::string reason;
  if (const auto it = spec->find("statusReason"); it != spec->end()) {
    if (it->is_string()) reason = it->get<std::string>();
    spec->erase(it);
  }
  const auto status = spec->find("status");
  if (status != spec->end() && *status == "failed") {
    *status = std::string(to_string(status_for_failure_reason(reason)));
  } else if (status != spec->end() && *status == "inconclusive") {
    *status = std::string(to_string(RunStatus::IncompleteEvidence));
  }
  if (!reason.empty()) {
    json& metadata = run["metadata"];
    if (!metadata.is_object()) metadata = json::object();
    metadata["description"] = utf8_prefix(reason, kMaxStatusReasonBytes);
  }
}

void upgrade_metrics_and_timing(json& run_spec) {
  if (json* native = object_at(run_spec, "sourceNative")) {
    if (json* metrics = object_at(*native, "metrics")) {
      json upgraded = json::object();
      for (auto it = metrics->begin(); it != metrics->end(); ++it) {
        if (it->is_number()) upgraded[snake_case(it.key())] = *it;
      }
      *metrics = std::move(upgraded);
    }
  }
  const auto m = run_spec.find("measurements");
  if (m == run_spec.end() || !m->is_array()) return;
  json kept = json::array();
  for (auto& item : *m) {
    if (item.is_object() && item.value("unit", json()) == "1") {
      // The old repetition count: the schema's timing.samples.
      if (item.value("metric", json()) == "repetitions" && item["value"].is_number_integer() &&
          item["value"].get<std::int64_t>() > 0) {
        if (json* timing = object_at(run_spec, "timing")) timing->emplace("samples", item["value"]);
      }
      continue;
    }
    kept.push_back(std::move(item));
  }
  *m = std::move(kept);
}

// Moves what the old environment software held into the places the schema has for it.
void upgrade_environment(json& record) {
  json* env_spec = object_at(record["environment"], "spec");
  json* run = object_at(record, "run");
  json* run_spec = run != nullptr ? object_at(*run, "spec") : nullptr;
  if (env_spec == nullptr || run_spec == nullptr) return;
  json* software = object_at(*env_spec, "software");
  if (software == nullptr) return;
  json& hardware = (*env_spec)["hardware"];
  json& native = (*run_spec)["sourceNative"];
  if (!native.is_object()) native = json::object();
  json& metrics = native["metrics"];
  if (!metrics.is_object()) metrics = json::object();
  json& metadata = (*run)["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  json& labels = metadata["labels"];
  if (!labels.is_object()) labels = json::object();

  json out = json::object();
  json libraries = json::object();
  for (auto it = software->begin(); it != software->end(); ++it) {
    const std::string& name = it.key();
    const json& value = *it;
    if (schema_software_fields().contains(name)) {
      out[name] = value;
    } else if (name == "before" || name == "after") {
      sample_metrics(value, name, metrics);
    } else if (name == "host" && value.is_object()) {
      if (value.contains("logicalCores")) metrics["host_logical_cores"] = value["logicalCores"];
      if (value.contains("memoryBytes")) metrics["host_memory_bytes"] = value["memoryBytes"];
    } else if (name == "gpu" && value.is_object()) {
      if (value.contains("uuid") && value["uuid"].is_string()) labels["gpu_uuid"] = value["uuid"];
      if (value.contains("smCount")) metrics["gpu_sm_count"] = value["smCount"];
      if (value.contains("l2Bytes")) metrics["gpu_l2_bytes"] = value["l2Bytes"];
      if (value.contains("memoryBytes") && value["memoryBytes"].is_number_integer() &&
          value["memoryBytes"].get<std::int64_t>() > 0) {
        hardware["memoryBytes"] = value["memoryBytes"];
      }
    } else if (name == "device" && value.is_object()) {
      if (value.contains("index") && value["index"].is_number_integer()) {
        labels["gpu_index"] = std::to_string(value["index"].get<std::int64_t>());
      }
    } else if (name == "cudaRuntime" || name == "cuda") {
      if (const std::string v = version_text(value); !v.empty()) out["cudaToolkit"] = v;
    } else if (name == "torch") {
      if (const std::string v = version_text(value); !v.empty()) {
        out["framework"] = {{"name", "pytorch"}, {"version", v}};
      }
    } else if (name == "triton" || name == "liger_kernel" || name == "python") {
      if (const std::string v = version_text(value); !v.empty()) libraries[name] = v;
    }
    // "runner" is the run's label already.
  }
  // A CPU host: its memory is the hardware's.
  if (!hardware.contains("memoryBytes") && metrics.contains("host_memory_bytes") &&
      !software->contains("gpu") && metrics["host_memory_bytes"].is_number_integer() &&
      metrics["host_memory_bytes"].get<std::int64_t>() > 0) {
    hardware["memoryBytes"] = metrics["host_memory_bytes"];
  }
  if (!libraries.empty()) out["libraries"] = std::move(libraries);
  *software = std::move(out);
  if (hardware.is_object() && !hardware.contains("architecture")) {
    hardware["architecture"] = std::string(kUnknownArchitecture);
  }
  if (metrics.empty()) native.erase("metrics");
  if (labels.empty()) metadata.erase("labels");
}

void upgrade_protocol(json& record) {
  json* protocol = object_at(record, "protocol");
  if (protocol == nullptr) return;
  json* spec = object_at(*protocol, "spec");
  if (spec == nullptr || !spec->contains("timedPass")) return;
  if (const auto settings = read_own_protocol(*spec)) *spec = own_protocol_spec(*settings);
}

void set_digest(json& record, const char* member, const char* field) {
  json* run_spec = object_at(record["run"], "spec");
  const json* document = object_at(record, member);
  if (run_spec == nullptr || document == nullptr) return;
  (*run_spec)[field] = document_digest(*document);
}

}  // namespace

std::string snake_case(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c >= 'A' && c <= 'Z') {
      const char previous = i > 0 ? name[i - 1] : '\0';
      if ((previous >= 'a' && previous <= 'z') || (previous >= '0' && previous <= '9')) {
        out += '_';
      }
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

bool is_legacy_record(const json& record) {
  if (!record.is_object()) return false;
  const json* run = object_at(record, "run");
  if (run == nullptr) return false;
  if (const json* spec = object_at(*run, "spec")) {
    if (spec->contains("statusReason")) return true;
    const auto status = spec->find("status");
    if (status != spec->end() && (*status == "failed" || *status == "inconclusive")) return true;
  }
  return own_source(*run) && legacy_own_parts(record);
}

bool upgrade_legacy_record(json& record) {
  if (!is_legacy_record(record)) return false;
  upgrade_status(record["run"]);
  if (own_source(record["run"]) && legacy_own_parts(record)) {
    if (json* spec = object_at(record["run"], "spec")) upgrade_metrics_and_timing(*spec);
    upgrade_environment(record);
    upgrade_protocol(record);
    set_digest(record, "environment", "environmentDigest");
    set_digest(record, "protocol", "protocolDigest");
  }
  return true;
}

}  // namespace kernelwatch::core
