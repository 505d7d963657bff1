// The band detector: a run's median against the historic p20/p80 band of its key's baseline,
// widened to the between-run spread the baseline shows. Pure; core and standard library only.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

enum class VerdictKind { InsufficientData, InBand, Regression, Improvement, Inconclusive };

// Latency up is a regression, latency down an improvement.
using core::Direction;  // core/alert.hpp

[[nodiscard]] std::string_view to_string(VerdictKind kind) noexcept;
using core::to_string;

using core::Band;  // core/alert.hpp

struct Verdict {
  VerdictKind kind = VerdictKind::InsufficientData;
  bool has_band = false;  // false when the baseline is too short to draw one
  Band band;
  std::vector<std::string> baseline_external_ids;  // oldest first
  double relative_change = 0;                      // (median - center) / center
  std::string explanation;                         // one line a person can read

  [[nodiscard]] bool breach() const {
    return kind == VerdictKind::Regression || kind == VerdictKind::Improvement;
  }
  [[nodiscard]] Direction direction() const {
    return kind == VerdictKind::Improvement ? Direction::Improvement : Direction::Regression;
  }
};

// The band drawn from a baseline (judgeable runs, any order). The center is the median of the
// medians; the band spans from the lowest to the highest baseline median, widened on each side
// by max(min_relative_margin x center, spread_factor x 1.4826 x MAD), and never narrower than
// the medians of the baseline's p20s and p80s. Rounded outward to whole nanoseconds.
[[nodiscard]] Band band_of(std::span<const Observation> baseline, const BandParameters& parameters);

// Judges one run against a baseline (the newest accepted runs of its segment, oldest first).
[[nodiscard]] Verdict judge(std::span<const Observation> baseline, const Observation& run,
                            const BandParameters& parameters);

}  // namespace kernelwatch::detectors
