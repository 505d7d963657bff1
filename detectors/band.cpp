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

// How far the key's settled runs strayed above and below their level, as relative margins:
// expm1(noise_factor x the one-sided noise_quantile of the residuals that way). The one-sided
// coverage 1 - (1 - q) / 2 equals the q quantile of |residual| for symmetric noise. Both sides
// from one sorted copy: max(r, 0) keeps the residuals' order, max(-r, 0) reverses it.
struct Excursions {
  double up = 0;
  double down = 0;
};
Excursions excursions(std::span<const double> residuals, const BandParameters& p) {
  if (residuals.size() < p.noise_min_runs || residuals.empty()) return {};
  thread_local std::vector<double> sorted;
  sorted.assign(residuals.begin(), residuals.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  // The quantile (type 7, as detectors::quantile) of the n values side(0) <= ... <= side(n - 1).
  const auto quantile_of = [&](const auto& side) {
    const double position =
        std::clamp(1 - (1 - p.noise_quantile) / 2, 0.0, 1.0) * static_cast<double>(n - 1);
    const auto below = static_cast<std::size_t>(std::floor(position));
    const std::size_t above = std::min(below + 1, n - 1);
    const double fraction = position - static_cast<double>(below);
    return side(below) + fraction * (side(above) - side(below));
  };
  const double up = quantile_of([&](std::size_t k) { return std::max(sorted[k], 0.0); });
  const double down = quantile_of([&](std::size_t k) { return std::max(-sorted[n - 1 - k], 0.0); });
  return {std::expm1(p.noise_factor * up), std::expm1(p.noise_factor * down)};
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

double range_margin(double center, bool trusted, const BandParameters& p) {
  if (trusted) return p.trusted_relative_margin;
  return std::max(p.min_relative_margin,
                  static_cast<double>(p.young_jitter.count()) / std::max(center, 1.0));
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
  const double floor = range_margin(center, context.trusted, p);
  const double spread =
      p.spread_factor * 1.4826 * median_absolute_deviation(medians, center) / center;
  const auto own = excursions(context.residuals, p);
  const double up = std::max(spread, own.up);
  const double down = std::max(spread, own.down);
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
  const bool young = n < parameters.min_history;
  const Direction way =
      verdict.relative_change > 0 ? Direction::Regression : Direction::Improvement;
  const double needed = std::max(parameters.big_step_threshold, margin_to(verdict.band, way));
  // The text is written into one string (judged for every run of a replay: a chain of
  // concatenations allocated a dozen times per run).
  std::string& text = verdict.explanation;
  text.reserve(160 + verdict.band_reason.size());
  text += "median ";
  text += median_text;
  const auto change = [&] {
    text += signed_percent(verdict.relative_change);
    text += " against the centre ";
    text += core::format_latency(verdict.band.center);
  };
  const auto band = [&] {
    text += "band [";
    text += core::format_latency(verdict.band.lower);
    text += ", ";
    text += core::format_latency(verdict.band.upper);
    text += "] of ";
    text += std::to_string(n);
    text += " run(s) (";
    text += verdict.band_reason;
    text += ')';
  };
  if (young && std::abs(verdict.relative_change) < needed) {
    verdict.kind = VerdictKind::InsufficientData;
    text += " (";
    change();
    text += "): ";
    text += std::to_string(n);
    text += " baseline run(s) judge only steps of ";
    text += percent(needed);
    text += " or more";
    return verdict;
  }
  verdict.kind = where;
  if (where == VerdictKind::InBand) {
    text += " inside the ";
    band();
    text += " (";
    change();
    text += ')';
    return verdict;
  }
  text += " is ";
  change();
  text += where == VerdictKind::Regression ? ", above the " : ", below the ";
  band();
  if (young) text += "; a big step judged from a short baseline";
  return verdict;
}

}  // namespace kernelwatch::detectors
