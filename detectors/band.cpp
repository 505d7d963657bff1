#include "detectors/band.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", std::abs(fraction) * 100);
  return text;
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

Band band_of(std::span<const Observation> baseline, const BandParameters& parameters) {
  KW_ASSERT(!baseline.empty(), "band_of needs at least one baseline run");
  std::vector<double> medians, p20s, p80s;
  medians.reserve(baseline.size());
  for (const auto& run : baseline) {
    medians.push_back(static_cast<double>(run.median.count()));
    p20s.push_back(static_cast<double>(run.p20_or_median().count()));
    p80s.push_back(static_cast<double>(run.p80_or_median().count()));
  }
  const double center = median(medians);
  const double spread = 1.4826 * median_absolute_deviation(medians);
  const double margin =
      std::max(parameters.min_relative_margin * center, parameters.spread_factor * spread);
  const auto [lowest, highest] = std::minmax_element(medians.begin(), medians.end());
  const double lower = std::min(*lowest - margin, median(p20s));
  const double upper = std::max(*highest + margin, median(p80s));
  Band band;
  band.lower = std::chrono::nanoseconds(static_cast<std::int64_t>(std::floor(lower)));
  band.upper = std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(upper)));
  band.center = std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(center)));
  return band;
}

Verdict judge(std::span<const Observation> baseline, const Observation& run,
              const BandParameters& parameters) {
  Verdict verdict;
  for (const auto& b : baseline) verdict.baseline_external_ids.push_back(b.external_id);
  if (!run.judgeable()) {
    verdict.kind = VerdictKind::Inconclusive;
    verdict.explanation = std::string("run is ") + std::string(core::to_string(run.status)) +
                          (run.status == core::RunStatus::Passed ? " without a median" : "") +
                          ": never judged, never baseline";
    verdict.baseline_external_ids.clear();
    return verdict;
  }
  const std::size_t n = baseline.size();
  const auto median_text = core::format_latency(run.median);
  if (n < std::max<std::size_t>(parameters.big_step_min_history, 1)) {
    verdict.kind = VerdictKind::InsufficientData;
    verdict.explanation =
        "median " + median_text + ": " + std::to_string(n) + " baseline run(s), fewer than " +
        std::to_string(parameters.big_step_min_history) + " needed for any verdict";
    return verdict;
  }
  verdict.has_band = true;
  verdict.band = band_of(baseline, parameters);
  const auto center = static_cast<double>(verdict.band.center.count());
  verdict.relative_change = (static_cast<double>(run.median.count()) - center) / center;
  const bool above = run.median > verdict.band.upper;
  const bool below = run.median < verdict.band.lower;
  const std::string band_text = "band [" + core::format_latency(verdict.band.lower) + ", " +
                                core::format_latency(verdict.band.upper) + "] of " +
                                std::to_string(n) + " run(s)";
  const std::string change_text = percent(verdict.relative_change) +
                                  (verdict.relative_change >= 0 ? " above" : " below") +
                                  " the baseline center";
  const bool young = n < parameters.min_history;
  if (young && std::abs(verdict.relative_change) < parameters.big_step_threshold) {
    verdict.kind = VerdictKind::InsufficientData;
    verdict.explanation = "median " + median_text + " (" + change_text + "): " + std::to_string(n) +
                          " baseline run(s) judge only steps of " +
                          percent(parameters.big_step_threshold) + " or more";
    return verdict;
  }
  if (!above && !below) {
    verdict.kind = VerdictKind::InBand;
    verdict.explanation =
        "median " + median_text + " inside the " + band_text + " (" + change_text + ")";
    return verdict;
  }
  verdict.kind = above ? VerdictKind::Regression : VerdictKind::Improvement;
  verdict.explanation = "median " + median_text + " is " + change_text + ", " +
                        (above ? "above" : "below") + " the " + band_text +
                        (young ? " (big step judged from a short baseline)" : "");
  return verdict;
}

}  // namespace kernelwatch::detectors
