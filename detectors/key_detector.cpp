#include "detectors/key_detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/error.hpp"

namespace kernelwatch::detectors {

KeyDetector::KeyDetector(DetectorParameters parameters) : parameters_(std::move(parameters)) {}

std::span<const Observation> KeyDetector::segment() const {
  const std::size_t keep = std::max(parameters_.band.window, parameters_.drift.window);
  const std::size_t n = std::min(segment_.size(), keep);
  return std::span<const Observation>(segment_).subspan(segment_.size() - n);
}

std::span<const Observation> KeyDetector::baseline() const {
  const auto runs = segment();
  return runs.subspan(runs.size() - std::min(runs.size(), parameters_.band.window));
}

BandContext KeyDetector::context() const {
  return BandContext{residuals_, judged_ >= parameters_.band.trust_runs};
}

Verdict KeyDetector::judge_run(const Observation& run) const {
  return judge(baseline(), run, parameters_.band, context());
}

void KeyDetector::remember_residual(std::chrono::nanoseconds median, const Band& band) {
  if (band.center.count() <= 0 || median.count() <= 0) return;
  residuals_.push_back(
      std::log(static_cast<double>(median.count()) / static_cast<double>(band.center.count())));
  if (residuals_.size() > parameters_.band.noise_window) {
    residuals_.erase(residuals_.begin(),
                     residuals_.begin() + static_cast<std::ptrdiff_t>(
                                              residuals_.size() - parameters_.band.noise_window));
  }
}

// An accepted run joins the segment and, judged against a band, the noise memory.
void KeyDetector::accept(const Observation& run, const Verdict& verdict) {
  // Up to half a window more than segment() shows, then the oldest go in one erase: each run
  // is moved about twice instead of once per run that follows it.
  const std::size_t keep = std::max(parameters_.band.window, parameters_.drift.window);
  const std::size_t most = keep + std::max<std::size_t>(keep / 2, 1);
  if (segment_.size() >= most) {
    segment_.erase(segment_.begin(),
                   segment_.begin() + static_cast<std::ptrdiff_t>(segment_.size() + 1 - keep));
  }
  if (segment_.capacity() < most) segment_.reserve(most);
  segment_.push_back(run);
  if (verdict.has_band) remember_residual(run.median, verdict.band);
}

// A breach nobody confirmed was an excursion of this key: its noise memory learns it.
void KeyDetector::drop_pending() {
  remember_residual(pending_->run.median, pending_->verdict.band);
  pending_.reset();
}

Trigger KeyDetector::step_trigger(const Observation& run, const Verdict& verdict,
                                  const Pending& onset, std::string_view how) const {
  Trigger trigger;
  trigger.kind = AlertKind::Step;
  trigger.direction = onset.verdict.direction();
  trigger.run = run;
  trigger.onset = onset.run;
  trigger.verdict = verdict;
  if (onset.before) trigger.attribution = attribute(*onset.before, onset.run);
  trigger.explanation = verdict.explanation;
  if (!how.empty())
    trigger.explanation += "; " + std::string(how) + " after " + onset.run.external_id;
  trigger.explanation += "; " + describe(trigger.attribution);
  return trigger;
}

// A pending breach is confirmed by a run that breaches the same band the same way; a large one
// also survives one run back in the band and may be confirmed by the run after it.
std::optional<KeyStep> KeyDetector::confirm_pending(const Observation& run) {
  const Band& band = pending_->verdict.band;
  const VerdictKind kind = classify(run.median, band);
  if (kind == pending_->verdict.kind) {
    KeyStep step;
    step.verdict = pending_->verdict;
    step.verdict.kind = kind;
    const auto center = static_cast<double>(band.center.count());
    step.verdict.relative_change = (static_cast<double>(run.median.count()) - center) / center;
    const std::string change = core::format_change(step.verdict.relative_change);
    step.verdict.explanation = "median " + core::format_latency(run.median) + " is " + change +
                               " against the centre " + core::format_latency(band.center) + ", " +
                               (kind == VerdictKind::Regression ? "above" : "below") +
                               " the band [" + core::format_latency(band.lower) + ", " +
                               core::format_latency(band.upper) + "] of " +
                               std::to_string(pending_->verdict.baseline_runs) + " run(s) (" +
                               pending_->verdict.band_reason + ")";
    const std::string_view how = pending_->survived_a_return
                                     ? "confirmed two runs later (the run between was back in "
                                       "the band)"
                                     : "confirmed by the next run";
    if (parameters_.confirm == ConfirmPolicy::Next) {
      step.trigger = step_trigger(run, step.verdict, *pending_, how);
    } else if (pending_->survived_a_return) {
      // Unconfirmed: the onset alerted by itself and the run between resolved it; this breach
      // alerts by itself again.
      Pending self{run, step.verdict, std::nullopt, false};
      if (!segment_.empty()) self.before = segment_.back();
      step.trigger = step_trigger(run, step.verdict, self, "");
    }
    previous_segment_ = std::move(segment_);
    previous_band_ = band;
    segment_ = {pending_->run, run};
    pending_.reset();
    step.role = RunRole::Confirmed;
    return step;
  }
  if (!pending_->survived_a_return && kind == VerdictKind::InBand &&
      std::abs(pending_->verdict.relative_change) >= parameters_.band.late_confirm_threshold) {
    pending_->survived_a_return = true;
  } else {
    drop_pending();
  }
  return std::nullopt;
}

std::optional<Trigger> KeyDetector::drift_trigger(const Observation& run) {
  const auto runs = segment();
  const auto drift = detect_drift(runs, parameters_.drift, &drift_memory_);
  if (!drift.detected) return std::nullopt;
  Trigger trigger;
  trigger.kind = AlertKind::Drift;
  trigger.direction = drift.direction;
  trigger.run = run;
  const std::size_t first = runs.size() - drift.runs;
  trigger.onset = runs[first];
  // Against the level where the trend began: a run back there resolves the alert.
  const std::size_t start_runs = std::min(parameters_.band.min_history, drift.runs);
  trigger.verdict = judge(runs.subspan(first, start_runs), run,
                          parameters_.band, context());
  trigger.verdict.has_band = true;
  trigger.verdict.relative_change = drift.relative_change;
  trigger.attribution = attribute(runs[first], run);
  trigger.explanation = drift.explanation + "; " + describe(trigger.attribution);
  // The drifted level is the new reference; the next change is measured from here.
  segment_ = {run};
  return trigger;
}

KeyStep KeyDetector::observe(const Observation& run) {
  KW_ASSERT(!last_observed_ || run.observed_at >= *last_observed_,
            "KeyDetector::observe needs runs in observed_at order");
  last_observed_ = run.observed_at;
  KeyStep step;
  if (!run.judgeable()) {
    step.verdict = judge({}, run, parameters_.band);
    step.role = RunRole::Ignored;
    return step;
  }
  judged_ = std::min(judged_ + 1, parameters_.band.trust_runs);
  last_judged_ = run;

  // A young step whose level did not hold: its runs were an excursion of the old level.
  if (previous_segment_ && previous_band_.contains(run.median)) {
    for (const auto& r : segment()) remember_residual(r.median, previous_band_);
    segment_ = std::move(*previous_segment_);
    previous_segment_.reset();
    pending_.reset();
    step.verdict = judge_run(run);
    accept(run, step.verdict);
    step.role = RunRole::Returned;
    return step;
  }

  if (pending_) {
    if (auto confirmed = confirm_pending(run)) return std::move(*confirmed);
  }

  step.verdict = judge_run(run);
  if (step.verdict.breach()) {
    if (pending_) drop_pending();  // a breach the other way, or after a late-surviving one
    pending_ = Pending{run, step.verdict, std::nullopt, false};
    if (!segment_.empty()) pending_->before = segment_.back();
    if (parameters_.confirm == ConfirmPolicy::None) {
      step.trigger = step_trigger(run, step.verdict, *pending_, "");
    }
    step.role = RunRole::Pending;
    return step;
  }

  step.role = RunRole::Accepted;
  accept(run, step.verdict);
  if (previous_segment_ && segment().size() >= parameters_.band.min_history) {
    previous_segment_.reset();  // the new level is established
  }
  if (!previous_segment_ && !pending_) step.trigger = drift_trigger(run);
  return step;
}

void KeyDetector::rebaseline() {
  pending_.reset();
  previous_segment_.reset();
  segment_.clear();
  if (last_judged_) segment_.push_back(*last_judged_);
}

}  // namespace kernelwatch::detectors
