// Builders of detector input for the detectors tests: runs with a given median and within-run
// spread, one per week from a fixed date. Plain C++ over detectors/observation.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors::testing {

inline core::Timestamp week(int index) {
  return core::Timestamp{std::chrono::sys_days{std::chrono::year{2025} / 1 / 6}} +
         std::chrono::days(7 * index);
}

// A passed run "run-<index>" at week(index) with the given median and p20/p80 offsets in ns.
inline Observation run_at(int index, std::int64_t median_ns, std::int64_t below = 0,
                          std::int64_t above = 0) {
  Observation run;
  run.external_id = "run-" + std::to_string(index);
  run.observed_at = week(index);
  run.median = std::chrono::nanoseconds(median_ns);
  run.p20 = std::chrono::nanoseconds(median_ns - below);
  run.p80 = std::chrono::nanoseconds(median_ns + above);
  run.implementation_version = "1.0.0";
  return run;
}

// The defaults without the young keys' 50 us jitter prior, which would take half the centre of
// the 100 us series these tests use (band_test covers the prior itself).
inline DetectorParameters without_jitter(ConfirmPolicy confirm = ConfirmPolicy::None) {
  DetectorParameters parameters;
  parameters.band.young_jitter = std::chrono::nanoseconds(0);
  parameters.confirm = confirm;
  return parameters;
}

inline std::vector<Observation> runs_of(const std::vector<std::int64_t>& medians,
                                        int first_index = 0) {
  std::vector<Observation> runs;
  for (std::size_t i = 0; i < medians.size(); ++i) {
    runs.push_back(run_at(first_index + static_cast<int>(i), medians[i]));
  }
  return runs;
}

}  // namespace kernelwatch::detectors::testing
