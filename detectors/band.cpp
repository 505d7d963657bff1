#include "detectors/band.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

std::string percent(double fraction) {
  return core::format_share(fraction);
}

std::string signed_percent(double fraction) {
  return core::format_change(fraction);
}

// How far the key's settled runs strayed above (sign +1) or below (-1) their level, as a relative
// margin: expm1(noise_factor x the one-sided noise_quantile of the residuals that way). The
// one-sided coverage 1 - (1 - q) / 2 equals the q quantile of |residual| for symmetric noise.
double excursion(std::span<const double> residuals, double sign, const BandParameters& p) {
  if (residuals.size() < p.noise_min_runs || residuals.empty()) return 0;
  thread_local std::vector<double> side;
  side.clear();
  for (double r : residuals) side.push_back(std::max(sign * r, 0.0));
  return std::expm1(p.noise_factor * quantile(side, 1 - (1 - p.noise_quantile) / 2));
}

}  // namespace

std::string_view to_string(VerdictKind kind) noexcept {
  switch (kind) {
    case VerdictKind::InsufficientData:
      return "insufficient_data";
    case VerdictKind::InBand:
      return "in_band";
    case VerdictKind::Regression:
      return "regression";
    case VerdictKind::Improvement:
      return "improvement";
    case VerdictKind::Inconclusive:
      return "inconclusive";
  }
  return "unknown";
}

Band band_of(std::span<const Observation> baseline, const BandContext& context,
             const BandParameters& p, std::string* why) {
  KW_ASSERT(!baseline.empty(), "band_of needs at least one baseline run");
  // Called for every judged run of a replay: the working vectors are reused per thread.
  thread_local std::vector<double> medians, p20s, p80s;
  medians.clear();
  p20s.clear();
  p80s.clear();
  for (const auto& run : baseline) {
    medians.push_back(static_cast<double>(run.median.count()));
    p20s.push_back(static_cast<double>(run.p20_or_median().count()));
    p80s.push_back(static_cast<double>(run.p80_or_median().count()));
  }
  const double center = median(medians);
  const double floor =
      context.trusted
          ? p.trusted_relative_margin
          : std::max(p.min_relative_margin,
                     static_cast<double>(p.young_jitter.count()) / std::max(center, 1.0));
  const double spread = p.spread_factor * 1.4826 * median_absolute_deviation(medians, center) / center;
  const double up = std::max(spread, excursion(context.residuals, +1, p));
  const double down = std::max(spread, excursion(context.residuals, -1, p));
  const auto [lowest, highest] = std::minmax_element(medians.begin(), medians.end());
  const double range_lower = *lowest - floor * center;
  const double range_upper = *highest + floor * center;
  const double lower = std::min({range_lower, center / (1 + down), median(p20s)});
  const double upper = std::max({range_upper, center * (1 + up), median(p80s)});
  if (why != nullptr) {
    const bool own = center * (1 + up) > range_upper || center / (1 + down) < range_lower;
    *why = own ? "own excursions (+" + percent(up) + " / -" + percent(down / (1 + down)) + ")"
               : "range +- " + percent(floor) + (context.trusted ? "" : " (young key)");
  }
  Band band;
  band.lower = std::chrono::nanoseconds(static_cast<std::int64_t>(std::floor(lower)));
  band.upper = std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(upper)));
  band.center = std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(center)));
  return band;
}

VerdictKind classify(std::chrono::nanoseconds median, const Band& band) {
  if (median > band.upper) return VerdictKind::Regression;
  if (median < band.lower) return VerdictKind::Improvement;
  return VerdictKind::InBand;
}

double margin_to(const Band& band, Direction direction) {
  const auto center = static_cast<double>(band.center.count());
  if (center <= 0) return 0;
  return direction == Direction::Regression
             ? static_cast<double>((band.upper - band.center).count()) / center
             : static_cast<double>((band.center - band.lower).count()) / center;
}

Verdict judge(std::span<const Observation> baseline, const Observation& run,
              const BandParameters& parameters, const BandContext& context) {
  Verdict verdict;
  if (!run.judgeable()) {
    verdict.kind = VerdictKind::Inconclusive;
    // The reason stays readable wherever the verdict is shown (status, dashboard).
    verdict.explanation = std::string("run is ") + std::string(core::to_string(run.status)) +
                          (run.status == core::RunStatus::Passed ? " without a median" : "") +
                          (run.status_reason.empty() ? "" : " (" + run.status_reason + ")") +
                          ": never judged, never baseline";
    return verdict;
  }
  const std::size_t n = baseline.size();
  verdict.baseline_runs = n;
  const auto median_text = core::format_latency(run.median);
  if (n < std::max<std::size_t>(parameters.big_step_min_history, 1)) {
    verdict.kind = VerdictKind::InsufficientData;
    verdict.explanation =
        "median " + median_text + ": " + std::to_string(n) + " baseline run(s), fewer than " +
        std::to_string(parameters.big_step_min_history) + " needed for any verdict";
    return verdict;
  }
  verdict.has_band = true;
  verdict.band = band_of(baseline, context, parameters, &verdict.band_reason);
  const auto center = static_cast<double>(verdict.band.center.count());
  verdict.relative_change = (static_cast<double>(run.median.count()) - center) / center;
  const VerdictKind where = classify(run.median, verdict.band);
  const std::string band_text = "band [" + core::format_latency(verdict.band.lower) + ", " +
                                core::format_latency(verdict.band.upper) + "] of " +
                                std::to_string(n) + " run(s) (" + verdict.band_reason + ")";
  const std::string change_text = signed_percent(verdict.relative_change) + " against the centre " +
                                  core::format_latency(verdict.band.center);
  const bool young = n < parameters.min_history;
  const Direction way =
      verdict.relative_change > 0 ? Direction::Regression : Direction::Improvement;
  const double needed = std::max(parameters.big_step_threshold, margin_to(verdict.band, way));
  if (young && std::abs(verdict.relative_change) < needed) {
    verdict.kind = VerdictKind::InsufficientData;
    verdict.explanation = "median " + median_text + " (" + change_text + "): " + std::to_string(n) +
                          " baseline run(s) judge only steps of " + percent(needed) + " or more";
    return verdict;
  }
  verdict.kind = where;
  if (where == VerdictKind::InBand) {
    verdict.explanation =
        "median " + median_text + " inside the " + band_text + " (" + change_text + ")";
    return verdict;
  }
  verdict.explanation = "median " + median_text + " is " + change_text + ", " +
                        (where == VerdictKind::Regression ? "above" : "below") + " the " +
                        band_text + (young ? "; a big step judged from a short baseline" : "");
  return verdict;
}

}  // namespace kernelwatch::detectors
