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

// One run's own spread as a normal sigma, log scale: (log p80 - log p20) / 1.6832 (p80 - p20
// spans 1.6832 sigma of a normal); 0 without both quantiles.
double own_sigma(const Observation& run) {
  if (!run.p20 || !run.p80 || run.p20->count() <= 0 || *run.p80 <= *run.p20) return 0;
  return std::log(static_cast<double>(run.p80->count()) / static_cast<double>(run.p20->count())) /
         1.6832;
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

double range_margin(double center, bool trusted, const BandParameters& p, bool prior) {
  if (trusted) return p.trusted_relative_margin;
  const auto absolute = prior ? p.young_jitter : p.young_resolution;
  return std::max(p.min_relative_margin,
                  static_cast<double>(absolute.count()) / std::max(center, 1.0));
}

bool young_prior(const BandContext& context, const BandParameters& p) {
  switch (p.young_prior) {
    case YoungPrior::Always:
      return true;
    case YoungPrior::Never:
      return false;
    case YoungPrior::Auto:
      break;
  }
  return context.several_hosts;
}

Evidence young_evidence(std::span<const Observation> baseline, const BandContext& context,
                        const BandParameters& p) {
  Evidence e;
  const std::size_t k = baseline.size();
  if (k < 2) return e;
  thread_local std::vector<double> own;
  own.clear();
  double sum = 0;
  for (const auto& run : baseline) {
    sum += std::log(static_cast<double>(run.median.count()));
    if (const double sigma = own_sigma(run); sigma > 0) own.push_back(sigma);
  }
  const double mean = sum / static_cast<double>(k);
  double squares = 0;
  for (const auto& run : baseline) {
    const double d = std::log(static_cast<double>(run.median.count())) - mean;
    squares += d * d;
  }
  // The runs' own spread is a prior of young_spread_weight degrees of freedom on the run-to-run
  // noise (conjugate normal model): two runs already give a finite interval, and a key whose
  // runs say nothing of their spread gets the t interval of its medians alone.
  e.own = median(own);
  const double prior_df = e.own > 0 ? std::max(p.young_spread_weight, 0.0) : 0.0;
  const double df = prior_df + static_cast<double>(k - 1);
  e.noise = std::sqrt((prior_df * e.own * e.own + squares) / df);
  const double tail = context.confirmed ? p.young_tail : p.young_tail_alone;
  e.t = student_t_quantile(1 - std::clamp(tail, 1e-12, 0.5), df);
  double variance = e.noise * e.noise * (1 + 1 / static_cast<double>(k));
  if (context.candidate != nullptr) {
    e.run_own = own_sigma(*context.candidate);
    if (e.run_own > e.own) {
      variance += e.run_own * e.run_own - e.own * e.own;
      e.widened = true;
    }
  }
  e.half_width = e.t * std::sqrt(variance);
  return e;
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
  const bool prior = context.trusted || young_prior(context, p);
  const double floor = range_margin(center, context.trusted, p, prior);
  const double spread =
      p.spread_factor * 1.4826 * median_absolute_deviation(medians, center) / center;
  const auto own = excursions(context.residuals, p);
  double up = std::max(spread, own.up);
  double down = std::max(spread, own.down);
  const double own_up = up;
  const double own_down = down;
  const auto [lowest, highest] = std::minmax_element(medians.begin(), medians.end());
  const double range_upper = *highest + floor * center;
  // Never a negative bound: a margin wider than the lowest median is taken as a ratio.
  const double range_lower =
      *lowest - floor * center > 0 ? *lowest - floor * center : *lowest / (1 + floor);
  const bool own_wins = center * (1 + up) > range_upper || center / (1 + down) < range_lower;
  Evidence evidence;
  if (!prior) {
    evidence = young_evidence(baseline, context, p);
    const double reach = std::expm1(evidence.half_width);
    up = std::max(up, reach);
    down = std::max(down, reach);
  }
  const double lower = std::min({range_lower, center / (1 + down), median(p20s)});
  const double upper = std::max({range_upper, center * (1 + up), median(p80s)});
  if (why != nullptr) {
    const bool by_evidence = !prior && (center * std::exp(evidence.half_width) >
                                            std::max(range_upper, center * (1 + own_up)) ||
                                        evidence.widened);
    if (by_evidence) {
      *why = "evidence +- " + percent(std::expm1(evidence.half_width)) +
             " (young key of one host: " + std::to_string(baseline.size()) + " run(s), noise " +
             percent(std::expm1(evidence.noise)) + ", own spread " +
             percent(std::expm1(evidence.own)) +
             (evidence.widened ? "; this run's own spread " +
                                     percent(std::expm1(evidence.run_own)) + ", judged with it"
                               : "") +
             ")";
    } else if (own_wins) {
      *why =
          "own excursions (+" + percent(own_up) + " / -" + percent(own_down / (1 + own_down)) + ")";
    } else {
      *why = "range +- " + percent(floor) +
             (context.trusted ? ""
              : prior         ? " (young key)"
                              : " (young key of one host)");
    }
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
  BandContext judged = context;
  judged.candidate = &run;
  verdict.band = band_of(baseline, judged, parameters, &verdict.band_reason);
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
