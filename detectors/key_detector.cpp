#include "detectors/key_detector.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace kernelwatch::detectors {

KeyDetector::KeyDetector(DetectorParameters parameters) : parameters_(std::move(parameters)) {}

std::span<const Observation> KeyDetector::baseline() const {
  const std::size_t n = std::min(segment_.size(), parameters_.band.window);
  return std::span<const Observation>(segment_).subspan(segment_.size() - n);
}

void KeyDetector::accept(const Observation& run) {
  segment_.push_back(run);
  const std::size_t keep = std::max(parameters_.band.window, parameters_.drift.window);
  if (segment_.size() > keep) {
    segment_.erase(segment_.begin(),
                   segment_.begin() + static_cast<std::ptrdiff_t>(segment_.size() - keep));
  }
}

Trigger KeyDetector::step_trigger(const Observation& run, const Verdict& verdict,
                                  const Pending& onset) const {
  Trigger trigger;
  trigger.kind = AlertKind::Step;
  trigger.direction = onset.verdict.direction();
  trigger.run = run;
  trigger.onset = onset.run;
  trigger.verdict = verdict;
  if (onset.before) trigger.attribution = attribute(*onset.before, onset.run);
  trigger.explanation = verdict.explanation;
  if (onset.run.external_id != run.external_id) {
    trigger.explanation += "; confirmed by the next run after " + onset.run.external_id;
  }
  trigger.explanation += "; " + describe(trigger.attribution);
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
  last_judged_ = run;

  // A young step whose level did not hold: back to the segment before it.
  if (previous_segment_ && previous_band_.contains(run.median)) {
    segment_ = std::move(*previous_segment_);
    previous_segment_.reset();
    pending_.reset();
    step.verdict = judge(baseline(), run, parameters_.band);
    step.role = RunRole::Returned;
    accept(run);
    return step;
  }

  step.verdict = judge(baseline(), run, parameters_.band);
  const Verdict& verdict = step.verdict;

  if (pending_) {
    if (verdict.breach() && verdict.direction() == pending_->verdict.direction()) {
      if (parameters_.confirm == ConfirmPolicy::Next) {
        step.trigger = step_trigger(run, verdict, *pending_);
      }
      previous_segment_ = std::move(segment_);
      previous_band_ = pending_->verdict.band;
      segment_ = {pending_->run, run};
      pending_.reset();
      step.role = RunRole::Confirmed;
      return step;
    }
    pending_.reset();  // it was a lone outlier: never baseline
  }

  if (verdict.breach()) {
    pending_ = Pending{run, verdict, std::nullopt};
    if (!segment_.empty()) pending_->before = segment_.back();
    if (parameters_.confirm == ConfirmPolicy::None) {
      step.trigger = step_trigger(run, verdict, *pending_);
    }
    step.role = RunRole::Pending;
    return step;
  }

  step.role = RunRole::Accepted;
  accept(run);
  if (previous_segment_ && segment_.size() >= parameters_.band.min_history) {
    previous_segment_.reset();  // the new level is established
  }
  if (!previous_segment_) {
    const auto drift = detect_drift(segment_, parameters_.drift);
    if (drift.detected) {
      Trigger trigger;
      trigger.kind = AlertKind::Drift;
      trigger.direction = drift.direction;
      trigger.run = run;
      const std::size_t first = segment_.size() - drift.runs;
      trigger.onset = segment_[first];
      trigger.verdict = verdict;
      // Against the level where the trend began: a run back there resolves the alert.
      const std::size_t start_runs = std::min(parameters_.band.min_history, drift.runs);
      trigger.verdict.band = band_of(
          std::span<const Observation>(segment_).subspan(first, start_runs), parameters_.band);
      trigger.verdict.has_band = true;
      trigger.verdict.relative_change = drift.relative_change;
      trigger.attribution = attribute(segment_[first], run);
      trigger.explanation = drift.explanation + "; " + describe(trigger.attribution);
      step.trigger = std::move(trigger);
      // The drifted level is the new reference; the next change is measured from here.
      segment_ = {run};
    }
  }
  return step;
}

void KeyDetector::rebaseline() {
  pending_.reset();
  previous_segment_.reset();
  segment_.clear();
  if (last_judged_) segment_.push_back(*last_judged_);
}

}  // namespace kernelwatch::detectors
