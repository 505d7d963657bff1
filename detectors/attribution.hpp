// Attribution: which recorded non-key fields (implementation version and digest, software
// environment) changed between the last accepted run and the run where a step began.
// Pure; standard library and detectors/ only.
#pragma once

#include <string>
#include <vector>

#include "detectors/observation.hpp"

namespace kernelwatch::detectors {

struct AttributionChange {
  // "implementation.version", "implementation.digest" or "software.<name>" ("software.driver").
  std::string field;
  std::string from;  // "" when the earlier run did not record it
  std::string to;    // "" when the later run does not record it

  friend bool operator==(const AttributionChange&, const AttributionChange&) = default;
};

// Changes from `before` to `after`: implementation version first, then digest, then software
// fields in name order. A field neither run records is never a change.
[[nodiscard]] std::vector<AttributionChange> attribute(const Observation& before,
                                                       const Observation& after);

// "implementation version changed 0.6.0 -> 0.6.1; software driver changed 550 -> 560";
// "no recorded implementation or software change" when empty.
[[nodiscard]] std::string describe(const std::vector<AttributionChange>& changes);

}  // namespace kernelwatch::detectors
