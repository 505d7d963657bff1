// The band detector: a run's median against the historic p20/p80 band of its key's baseline,
// widened to the between-run spread the baseline shows and to the excursions the key's own
// settled runs made. Pure; core and standard library only.
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
  std::size_t baseline_runs = 0;  // the runs the band was drawn from
  double relative_change = 0;     // (median - center) / center
  std::string band_reason;  // what set the band's edge ("range +- 1.0%", "own excursions ...")
  std::string explanation;  // one line a person can read

  [[nodiscard]] bool breach() const {
    return kind == VerdictKind::Regression || kind == VerdictKind::Improvement;
  }
  [[nodiscard]] Direction direction() const {
    return kind == VerdictKind::Improvement ? Direction::Improvement : Direction::Regression;
  }
};

// What a key knows beyond its baseline: its own settled residuals and whether it is trusted.
struct BandContext {
  std::span<const double> residuals;  // log(median / centre) of the key's settled runs
  bool trusted = false;               // judged at least trust_runs runs
  // The key's runs came from several hosts (BandParameters::young_prior): a young key keeps the
  // cross-host prior. Without it a young key's band comes from the evidence of its runs.
  bool several_hosts = false;
  // Breaches of the key alert only when the next run confirms them (the evidence interval's
  // tail: young_tail, else young_tail_alone).
  bool confirmed = false;
  // The run being judged: its own p20-p80, when wider than the baseline's, widens a young key's
  // evidence interval ("judged with that width"). Null for a band drawn without a candidate.
  const Observation* candidate = nullptr;
};

// The band drawn from a baseline (judgeable runs, any order), centre c = median of the medians:
// the union of [min - f c, max + f c] (f: trusted_relative_margin for a trusted key, else
// max(min_relative_margin, young_jitter / c)) and [c / (1 + down), c (1 + up)] (up/down: the
// larger of spread_factor x 1.4826 x MAD / c and the key's own excursions that way), never
// narrower than the medians of the baseline's p20s and p80s. Rounded outward to whole ns.
// `why`, when given, names what set the edge ("range +- 1.0%", "own excursions (+a% / -b%)").
[[nodiscard]] Band band_of(std::span<const Observation> baseline, const BandContext& context,
                           const BandParameters& parameters, std::string* why = nullptr);

// The fraction of the centre a band reaches beyond a baseline's extreme medians:
// trusted_relative_margin for a trusted key, else max(min_relative_margin, young_jitter / centre)
// with the cross-host prior and max(min_relative_margin, young_resolution / centre) without.
[[nodiscard]] double range_margin(double center, bool trusted, const BandParameters& parameters,
                                  bool prior = true);
// Whether a young key's band carries the cross-host prior (BandParameters::young_prior).
[[nodiscard]] bool young_prior(const BandContext& context, const BandParameters& parameters);

// A young one-host key's evidence (BandParameters::young_*): the half-width, log scale, of the
// interval a stable next median falls in, and what it was drawn from.
struct Evidence {
  double half_width = 0;  // log scale
  double noise = 0;       // the pooled sigma of one run's median (log scale)
  double own = 0;         // the baseline runs' own sigma (median of their p20-p80 / 1.6832)
  double run_own = 0;     // the candidate's own sigma (0 without a candidate)
  double t = 0;           // the Student t quantile used
  bool widened = false;   // the candidate's own spread widened it
};
[[nodiscard]] Evidence young_evidence(std::span<const Observation> baseline,
                                      const BandContext& context, const BandParameters& parameters);

// Where a median falls against a band.
[[nodiscard]] VerdictKind classify(std::chrono::nanoseconds median, const Band& band);
// (edge - centre) / centre the way of `direction`: how far the band reaches that way.
[[nodiscard]] double margin_to(const Band& band, Direction direction);

// Judges one run against a baseline (the newest accepted runs of its segment, oldest first).
// Fewer than min_history baseline runs judge only changes of at least big_step_threshold and
// beyond the band's margin that way.
[[nodiscard]] Verdict judge(std::span<const Observation> baseline, const Observation& run,
                            const BandParameters& parameters, const BandContext& context = {});

}  // namespace kernelwatch::detectors
