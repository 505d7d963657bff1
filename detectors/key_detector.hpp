// One key's detector: band verdicts against the current segment, the confirmation policy,
// segment restarts after a confirmed step (or a drift alert), and the drift test.
// Pure and deterministic; standard library and detectors/ only.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "detectors/attribution.hpp"
#include "detectors/band.hpp"
#include "detectors/drift.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

using core::AlertKind;  // core/alert.hpp (the detectors raise Step, Drift, Environment)

// What the detector did with a run.
enum class RunRole {
  Ignored,    // failed, inconclusive or without a median: never baseline, never alerts
  Accepted,   // joined the baseline (in band, or insufficient data to judge it)
  Pending,    // breached; waits for the next run to confirm or to show it was an outlier
  Confirmed,  // breached like the pending run: a new segment starts at the pending run
  Returned,   // back in the band of the segment before a young step: that step was an excursion
};

// An alert the detector asks for, with the confirmation policy applied.
struct Trigger {
  AlertKind kind = AlertKind::Step;
  Direction direction = Direction::Regression;
  Observation run;    // the run at which it fires
  Observation onset;  // the first run at the new level (== run without confirmation)
  Verdict verdict;    // of `run` against the baseline (band, baseline runs, relative change)
  std::vector<AttributionChange> attribution;  // last accepted run -> onset
  std::string explanation;
};

struct KeyStep {
  Verdict verdict;  // this run against the baseline it was judged by
  RunRole role = RunRole::Ignored;
  std::optional<Trigger> trigger;
};

class KeyDetector {
 public:
  explicit KeyDetector(DetectorParameters parameters);

  // Runs must arrive in observed_at order (a run older than the last one is a bug of the caller).
  [[nodiscard]] KeyStep observe(const Observation& run);
  // The confirmation policy for the runs that follow: a key shared by imported history (never
  // rerun) and the daemon's own runs (rerun at once) confirms by the policy of the run judged.
  void set_confirm(ConfirmPolicy confirm) { parameters_.confirm = confirm; }

  // An operator accepted the current level: the baseline restarts with the newest judged run.
  void rebaseline();

  // The accepted runs of the current segment, oldest first (at most max(window, drift window)).
  [[nodiscard]] std::span<const Observation> segment() const;
  [[nodiscard]] bool has_pending() const { return pending_.has_value(); }
  // The observed_at of the newest run seen (the next run must not be older).
  [[nodiscard]] const std::optional<core::Timestamp>& last_observed() const {
    return last_observed_;
  }
  // The residuals log(median / centre) of the key's settled runs, oldest first.
  [[nodiscard]] const std::vector<double>& residuals() const { return residuals_; }

 private:
  struct Pending {
    Observation run;
    Verdict verdict;  // against the band it breached: the confirmation is judged by it too
    std::optional<Observation> before;  // the last accepted run before it (attribution)
    bool survived_a_return = false;     // one run came back in band since (late confirmation)
  };

  [[nodiscard]] std::span<const Observation> baseline() const;
  [[nodiscard]] BandContext context() const;
  [[nodiscard]] Verdict judge_run(const Observation& run) const;
  void accept(const Observation& run, const Verdict& verdict);
  void remember_residual(std::chrono::nanoseconds median, const Band& band);
  void drop_pending();
  [[nodiscard]] std::optional<KeyStep> confirm_pending(const Observation& run);
  [[nodiscard]] std::optional<Trigger> drift_trigger(const Observation& run);
  // BandParameters::persist_*: the step a level that holds makes, or nullopt.
  [[nodiscard]] std::optional<Trigger> persistent_step(const Observation& run,
                                                       const Verdict& judged);
  void remember_recent(const Observation& run, const Verdict& judged);
  // The segment restarts: the runs judged since its start are forgotten.
  void restart_recent() { recent_.clear(); }
  // The segment restarts at `start`; the one before it is kept while the new one is young.
  void restart_segment_at(core::Timestamp start) {
    previous_segment_start_ = segment_start_;
    segment_start_ = start;
    recent_.clear();
  }
  [[nodiscard]] Trigger step_trigger(const Observation& run, const Verdict& verdict,
                                     const Pending& onset, std::string_view how) const;

  DetectorParameters parameters_;
  // The segment's runs, oldest first; older ones beyond what segment() shows are dropped in
  // batches (erasing one run from the front at every run moved the whole window each time).
  std::vector<Observation> segment_;
  // While a confirmed step is young (its segment shorter than min_history), the segment before
  // it and its band: a run back inside that band ends the step as an excursion.
  std::optional<std::vector<Observation>> previous_segment_;
  Band previous_band_;
  std::optional<Pending> pending_;
  // The segment's newest judged runs (any role) that all moved one way (recent_up_: slower) by
  // at least half persist_min_change from their band's centre, at most persist_runs, oldest
  // first.
  std::vector<Observation> recent_;
  bool recent_up_ = false;
  // The key's newest judged runs whatever their role (accepted, breaches dropped, excursions):
  // what a level is compared with by the persistence test; at most window + persist_runs
  // (dropped in batches). The segment's first run's date: runs before it are another level.
  struct Judged {
    core::Timestamp at;
    double median = 0;
  };
  std::vector<Judged> judged_runs_;
  std::optional<core::Timestamp> segment_start_;
  std::optional<core::Timestamp> previous_segment_start_;
  std::vector<double> residuals_;  // at most noise_window, oldest first
  DriftMemory drift_memory_;       // the drift test's window and its Mann-Kendall count
  std::size_t judged_ = 0;         // judged runs seen (saturating at trust_runs)
  // The first host a judged run named, and whether runs came from several (named hosts that
  // differ, or a source whose runs span hosts they do not name): BandContext::several_hosts.
  std::string first_host_;
  bool several_hosts_ = false;
  std::optional<core::Timestamp> last_observed_;
  std::optional<Observation> last_judged_;  // the newest judgeable run, whatever its role
};

}  // namespace kernelwatch::detectors
