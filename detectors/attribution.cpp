#include "detectors/attribution.hpp"

#include <set>

namespace kernelwatch::detectors {

std::vector<AttributionChange> attribute(const Observation& before, const Observation& after) {
  std::vector<AttributionChange> changes;
  if (before.implementation_version != after.implementation_version) {
    changes.push_back(
        {"implementation.version", before.implementation_version, after.implementation_version});
  }
  if (before.implementation_digest != after.implementation_digest) {
    changes.push_back(
        {"implementation.digest", before.implementation_digest, after.implementation_digest});
  }
  std::set<std::string> names;
  for (const auto& [name, value] : before.software) names.insert(name);
  for (const auto& [name, value] : after.software) names.insert(name);
  for (const auto& name : names) {
    const auto from = before.software.find(name);
    const auto to = after.software.find(name);
    const std::string from_value = from == before.software.end() ? "" : from->second;
    const std::string to_value = to == after.software.end() ? "" : to->second;
    if (from_value != to_value) changes.push_back({"software." + name, from_value, to_value});
  }
  // Where it ran, when both runs say: a step that began on another host than the run before it
  // (a new host judged by its fleet's runs, storage.warm_start) may be the host's, not the code's.
  const std::string& from_host = before.placement->host;
  const std::string& to_host = after.placement->host;
  if (!from_host.empty() && !to_host.empty() && from_host != to_host) {
    changes.push_back({"host", from_host, to_host});
  }
  return changes;
}

}  // namespace kernelwatch::detectors
