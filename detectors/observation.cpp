#include "detectors/observation.hpp"

#include <string>

namespace kernelwatch::detectors {
namespace {

void flatten(const nlohmann::json& value, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (value.is_object()) {
    for (const auto& [name, child] : value.items()) {
      flatten(child, prefix.empty() ? name : prefix + "." + name, out);
    }
    return;
  }
  if (prefix.empty()) return;
  out[prefix] = value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

std::map<std::string, std::string> software_fields(const nlohmann::json& software) {
  std::map<std::string, std::string> out;
  if (!software.is_object()) return out;
  for (auto it = software.begin(); it != software.end(); ++it) {
    const nlohmann::json& value = *it;
    // A change is named by what changed: "triton", "pytorch", not "libraries.triton" or
    // "framework.version".
    if (it.key() == "libraries" && value.is_object()) {
      flatten(value, "", out);
    } else if (it.key() == "framework" && value.is_object() && value.contains("name") &&
               value["name"].is_string() && value.contains("version")) {
      flatten(value["version"], value["name"].get<std::string>(), out);
    } else {
      flatten(value, it.key(), out);
    }
  }
  return out;
}

KeyLabels key_labels(const core::ComparabilityKey& key) {
  return KeyLabels{key.benchmark.label,   key.provider.label, key.workload.label,
                   key.environment.label, key.protocol.label, key.digest()};
}

KeyLabels key_labels(const core::Run& run) {
  const core::ComparabilityKey& key = run.key();
  return KeyLabels{key.benchmark.label,   key.provider.label, key.workload.label,
                   key.environment.label, key.protocol.label, run.key_digest()};
}

bool spans_unnamed_hosts(std::string_view source, const core::Placement& placement) {
  return placement.host.empty() && source == core::kLigerCiSource;
}

Observation observation_from_record(const core::Record& record,
                                    std::string_view implementation_version) {
  Observation observation;
  observation.external_id = record.run.source_native.external_id;
  if (observation.external_id.empty()) observation.external_id = record.run.metadata.name;
  observation.observed_at = record.run.observed_at;
  observation.status = record.run.status;
  observation.median = record.run.median.value_or(std::chrono::nanoseconds{0});
  observation.p20 = record.run.latency("p20");
  observation.p80 = record.run.latency("p80");
  observation.implementation_version = std::string(implementation_version);
  observation.implementation_digest = record.run.implementation_digest;
  observation.software = software_fields(record.environment.software);
  observation.status_reason = record.run.status_reason;
  observation.placement = core::placement_of(record.run.metadata);
  observation.unnamed_hosts =
      spans_unnamed_hosts(record.run.source_native.source, *observation.placement);
  return observation;
}

}  // namespace kernelwatch::detectors
