#include "detectors/key_detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/error.hpp"
#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {

namespace {

// A level that persisted: the old level's centre, its range's floor and spread, the bounds the
// newest runs all left, and the newest runs' median and side.
struct PersistedLevel {
  double center = 0;
  double floor = 0;
  double spread = 0;
  double low = 0;
  double high = 0;
  double level = 0;
  bool above = false;
};

// The verdict on a level that persisted: its band (the bounds the newest runs left, at least the
// spread around the centre) and why, from `baseline_runs` judged runs and the newest `newest`.
Verdict level_verdict(const PersistedLevel& l, std::size_t baseline_runs, std::size_t newest,
                      const BandParameters& p) {
  Verdict verdict;
  verdict.kind = l.above ? VerdictKind::Regression : VerdictKind::Improvement;
  verdict.has_band = true;
  verdict.baseline_runs = baseline_runs;
  verdict.band.center = std::chrono::nanoseconds(std::llround(l.center));
  verdict.band.lower = std::chrono::nanoseconds(
      static_cast<std::int64_t>(std::floor(std::min(l.low, l.center / (1 + l.spread)))));
  verdict.band.upper = std::chrono::nanoseconds(
      static_cast<std::int64_t>(std::ceil(std::max(l.high, l.center * (1 + l.spread)))));
  verdict.relative_change = l.level / l.center - 1;
  verdict.band_reason = "the level's accepted runs but the " + std::to_string(p.persist_trim) +
                        " most extreme that way, range +- " + core::format_share(l.floor) + ", " +
                        std::to_string(static_cast<int>(p.spread_factor)) + "x MAD";
  verdict.explanation =
      "the newest " + std::to_string(newest) + " runs (median " +
      core::format_latency(std::chrono::nanoseconds(std::llround(l.level))) + ", " +
      core::format_change(verdict.relative_change) + " against the centre " +
      core::format_latency(verdict.band.center) + ") all lie " + (l.above ? "above" : "below") +
      " the band [" + core::format_latency(verdict.band.lower) + ", " +
      core::format_latency(verdict.band.upper) + "] of " + std::to_string(baseline_runs) +
      " judged run(s) (" + verdict.band_reason + "): a level change that persists";
  return verdict;
}

}  // namespace

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
  BandContext context;
  context.residuals = residuals_;
  context.trusted = judged_ >= parameters_.band.trust_runs;
  context.several_hosts = several_hosts_;
  context.confirmed = parameters_.confirm == ConfirmPolicy::Next;
  return context;
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
    restart_segment_at(pending_->run.observed_at);
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
  trigger.verdict = judge(runs.subspan(first, start_runs), run, parameters_.band, context());
  trigger.verdict.has_band = true;
  trigger.verdict.relative_change = drift.relative_change;
  trigger.attribution = attribute(runs[first], run);
  trigger.explanation = drift.explanation + "; " + describe(trigger.attribution);
  // The drifted level is the new reference; the next change is measured from here.
  segment_ = {run};
  restart_segment_at(run.observed_at);
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
  if (run.unnamed_hosts) {
    several_hosts_ = true;
  } else if (const std::string& host = run.placement->host; !host.empty() && !several_hosts_) {
    if (first_host_.empty()) {
      first_host_ = host;
    } else if (host != first_host_) {
      several_hosts_ = true;
    }
  }
  if (parameters_.band.persist_runs > 0) {
    const std::size_t keep = parameters_.band.window + parameters_.band.persist_runs;
    if (judged_runs_.size() >= 2 * keep) {
      judged_runs_.erase(judged_runs_.begin(),
                         judged_runs_.begin() + static_cast<std::ptrdiff_t>(keep));
    }
    judged_runs_.push_back({run.observed_at, static_cast<double>(run.median.count())});
  }

  // A young step whose level did not hold: its runs were an excursion of the old level.
  if (previous_segment_ && previous_band_.contains(run.median)) {
    for (const auto& r : segment()) remember_residual(r.median, previous_band_);
    segment_ = std::move(*previous_segment_);
    previous_segment_.reset();
    segment_start_ = previous_segment_start_;
    pending_.reset();
    restart_recent();
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
    } else if (!previous_segment_) {
      remember_recent(run, step.verdict);
      step.trigger = persistent_step(run, step.verdict);
    }
    step.role = step.trigger && parameters_.confirm != ConfirmPolicy::None ? RunRole::Confirmed
                                                                           : RunRole::Pending;
    return step;
  }

  step.role = RunRole::Accepted;
  accept(run, step.verdict);
  if (previous_segment_ && segment().size() >= parameters_.band.min_history) {
    previous_segment_.reset();  // the new level is established
  }
  if (!previous_segment_) {
    remember_recent(run, step.verdict);
    step.trigger = persistent_step(run, step.verdict);
    if (step.trigger) {
      step.role = RunRole::Confirmed;
    } else if (!pending_) {
      step.trigger = drift_trigger(run);
    }
  }
  return step;
}

void KeyDetector::rebaseline() {
  pending_.reset();
  previous_segment_.reset();
  segment_.clear();
  if (last_judged_) {
    segment_.push_back(*last_judged_);
    restart_segment_at(last_judged_->observed_at);
  } else {
    restart_recent();
  }
}

// A level that holds for persist_runs runs is a step even where the key's own excursions (or
// outliers accepted into its segment) let the band reach over it: the newest runs against the
// baseline without those excursions and without its persist_trim most extreme runs that way.
// Only runs at least half persist_min_change from the band's centre can make a level that
// persists: any other run ends the series, and the test costs nothing on a key that stays put.
void KeyDetector::remember_recent(const Observation& run, const Verdict& judged) {
  const auto& p = parameters_.band;
  if (p.persist_runs == 0) return;
  if (!judged.has_band || std::abs(judged.relative_change) < p.persist_min_change / 2) {
    recent_.clear();
    return;
  }
  if (!recent_.empty() && recent_up_ != (judged.relative_change > 0)) recent_.clear();
  recent_up_ = judged.relative_change > 0;
  if (recent_.size() >= p.persist_runs) recent_.erase(recent_.begin());
  recent_.push_back(run);
}

std::optional<Trigger> KeyDetector::persistent_step(const Observation& run, const Verdict& judged) {
  const auto& p = parameters_.band;
  if (p.persist_runs == 0 || recent_.size() < p.persist_runs || !judged.has_band) {
    return std::nullopt;
  }
  // The band must reach persist_band_factor x persist_min_change that way at least.
  const Direction toward = recent_up_ ? Direction::Regression : Direction::Improvement;
  if (std::log1p(margin_to(judged.band, toward)) <
      p.persist_band_factor * std::log1p(p.persist_min_change)) {
    return std::nullopt;
  }
  // The level's accepted runs before the newest ones (the newest `window`): its extremes, but
  // the persist_trim most extreme that way, are what the newest runs must all leave; a return
  // into their band ends the step.
  auto runs = segment();
  std::size_t n = runs.size();
  const auto is_recent = [&](const Observation& r) {
    return std::any_of(recent_.begin(), recent_.end(),
                       [&](const Observation& x) { return x.external_id == r.external_id; });
  };
  while (n > 0 && is_recent(runs[n - 1])) --n;
  const std::size_t first = n - std::min(n, p.window);
  if (n - first < p.min_history + p.persist_trim) return std::nullopt;
  std::vector<double> accepted;
  accepted.reserve(n - first);
  for (std::size_t i = first; i < n; ++i) {
    accepted.push_back(static_cast<double>(runs[i].median.count()));
  }
  std::sort(accepted.begin(), accepted.end());
  // Every judged run of the level before the newest ones, accepted or not (the breaches it
  // dropped are its own tail; without them its spread is underestimated): centre and spread.
  const std::size_t older = judged_runs_.size() - recent_.size();
  std::size_t from = older;
  while (from > 0 && older - from < p.window &&
         (!segment_start_ || judged_runs_[from - 1].at >= *segment_start_)) {
    --from;
  }
  std::vector<double> medians;
  medians.reserve(older - from);
  for (std::size_t i = from; i < older; ++i) medians.push_back(judged_runs_[i].median);
  // A spread from fewer runs is too uncertain to call three runs a level (7 runs of a 12%
  // series can show a 4% MAD).
  if (medians.size() < std::max(p.min_history, p.trust_runs)) return std::nullopt;
  const double center = median(medians);
  if (center <= 0) return std::nullopt;
  const double floor = range_margin(center, judged_ >= p.trust_runs, p);
  const double sigma = 1.4826 * median_absolute_deviation(medians, center) / center;
  const double spread = std::max(floor, p.spread_factor * sigma);
  const double high = accepted[accepted.size() - 1 - p.persist_trim] + floor * center;
  const double low = accepted[p.persist_trim] - floor * center;

  std::vector<double> newest;
  for (const auto& r : recent_) newest.push_back(static_cast<double>(r.median.count()));
  const bool above = std::all_of(newest.begin(), newest.end(), [&](double m) { return m > high; });
  const bool below = std::all_of(newest.begin(), newest.end(), [&](double m) { return m < low; });
  const double level = median(newest);
  // Their median is persist_spread standard deviations of one run (1.4826 x MAD) and
  // persist_min_change beyond the centre.
  const double moved = std::log(level / center);
  const double needed =
      std::max({std::log1p(floor), std::log1p(p.persist_min_change), p.persist_spread * sigma});
  if (!(above && moved > needed) && !(below && -moved > needed)) return std::nullopt;
  // Only where the key's band reaches persist_band_factor times that far: a band widened by a
  // few excursions, not a key whose every run is that noisy (there the band decides).
  const Direction way = above ? Direction::Regression : Direction::Improvement;
  if (std::log1p(margin_to(judged.band, way)) < p.persist_band_factor * needed) {
    return std::nullopt;
  }

  const Verdict verdict = level_verdict({center, floor, spread, low, high, level, above},
                                        medians.size(), recent_.size(), p);
  Trigger trigger;
  trigger.kind = AlertKind::Step;
  trigger.direction = way;
  trigger.run = run;
  trigger.onset = recent_.front();
  trigger.verdict = verdict;
  if (n > 0) trigger.attribution = attribute(runs[n - 1], trigger.onset);
  trigger.explanation = verdict.explanation + "; " + describe(trigger.attribution);

  // A new segment at the level that held, without a run of it farther from that level than the
  // level moved (an outlier among them must not widen the new level's range); a return into the
  // old level's band ends it. The excursions the key had learned hid this change: they are
  // forgotten, so that they cannot hide the next one.
  previous_segment_ =
      std::vector<Observation>(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(n));
  previous_band_ = verdict.band;
  segment_.clear();
  for (const auto& r : recent_) {
    if (std::abs(std::log(static_cast<double>(r.median.count()) / level)) <= std::abs(moved)) {
      segment_.push_back(r);
    }
  }
  restart_segment_at(recent_.front().observed_at);
  residuals_.clear();
  pending_.reset();
  return trigger;
}

}  // namespace kernelwatch::detectors
