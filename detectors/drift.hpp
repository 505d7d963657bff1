// The drift detector: a slow monotone move that never breaks the band in one run, found with a
// Mann-Kendall trend test and sized with a Theil-Sen line over the segment's newest runs.
// Pure; standard library and detectors/ only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "detectors/band.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"
#include "detectors/statistics.hpp"

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

// What detect_drift keeps between calls on one key: the window of medians it tested last and
// its Mann-Kendall S, so a window that slid or grew by one run costs O(n) instead of O(n^2) (the
// test runs at every accepted run of a replay). Any other window is counted afresh.
struct DriftMemory {
  std::vector<double> window;
  std::int64_t s = 0;
  std::size_t tied_pairs = 0;  // pairs of equal medians (the tie-corrected variance needs a sort)
};

// Mann-Kendall of `values`, the same as mann_kendall(values), through `memory`.
[[nodiscard]] MannKendall remembered_trend(std::span<const double> values, DriftMemory& memory);

// `runs`: the segment's accepted runs, oldest first; only the newest parameters.window count.
[[nodiscard]] DriftResult detect_drift(std::span<const Observation> runs,
                                       const DriftParameters& parameters,
                                       DriftMemory* memory = nullptr);

}  // namespace kernelwatch::detectors
