// The drift detector: a slow monotone move that never breaks the band in one run, found with a
// Mann-Kendall trend test and sized with a Theil-Sen line over the segment's newest runs.
// Pure; standard library and detectors/ only.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "detectors/band.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

struct DriftResult {
  bool detected = false;
  Direction direction = Direction::Regression;
  double z = 0;                // Mann-Kendall normal score, > 0 upward
  double relative_change = 0;  // Theil-Sen line, end relative to start (0 when |z| is below
                               // the threshold: the line is drawn only for a trend)
  std::size_t runs = 0;
  std::string explanation;  // only when detected
};

// `runs`: the segment's accepted runs, oldest first; only the newest parameters.window count.
[[nodiscard]] DriftResult detect_drift(std::span<const Observation> runs,
                                       const DriftParameters& parameters);

}  // namespace kernelwatch::detectors
