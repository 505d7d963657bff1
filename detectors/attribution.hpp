// Attribution: which recorded non-key fields (implementation version and digest, software
// environment, the host it ran on) changed between the last accepted run and the run where a
// step began.
// Pure; standard library and detectors/ only.
#pragma once

#include <string>
#include <vector>

#include "core/alert.hpp"
#include "detectors/observation.hpp"

namespace kernelwatch::detectors {

using core::AttributionChange;  // core/alert.hpp
using core::describe;

// Changes from `before` to `after`: implementation version first, then digest, then software
// fields in name order, then the host (only when both runs name one). A field neither run
// records is never a change.
[[nodiscard]] std::vector<AttributionChange> attribute(const Observation& before,
                                                       const Observation& after);

}  // namespace kernelwatch::detectors
