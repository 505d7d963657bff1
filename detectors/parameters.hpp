// Every tunable of the detectors in one place, with the defaults docs/DETECTION.md justifies.
// Plain structs, standard library only; the config loader and the CLI fill them.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace kernelwatch::detectors {

// What a breach needs before it alerts. The daemon reruns at once (Next, with the rerun as the
// next run); the backtest, which cannot rerun, chooses.
enum class ConfirmPolicy {
  None,  // a breaching run alerts by itself
  Next,  // the next judged run must breach the same band in the same direction
};

struct BandParameters {
  // Baseline: the newest `window` accepted runs of the key's current segment.
  std::size_t window = 20;
  // Fewer accepted runs than this: insufficient data ...
  std::size_t min_history = 5;
  // ... except that a change of at least big_step_threshold may be judged from this many.
  std::size_t big_step_min_history = 2;
  double big_step_threshold = 0.20;
  // The band is never closer to the baseline's extreme medians than this fraction of the
  // baseline center: it absorbs host-to-host noise (1.5% on Liger's CI) that a short history
  // may not have shown yet.
  double min_relative_margin = 0.02;
  // The margin also covers spread_factor x 1.4826 x MAD of the baseline medians.
  double spread_factor = 3.0;
};

struct DriftParameters {
  // Mann-Kendall over the newest `window` accepted runs of the segment (this run included).
  std::size_t window = 20;
  std::size_t min_runs = 10;
  // One-sided normal score of the Mann-Kendall statistic needed.
  double z_threshold = 4.0;
  // And the Theil-Sen line must move at least this fraction of its start over the window.
  double min_total_change = 0.025;
};

struct ControlParameters {
  // Providers that serve as controls: a move of one of these on the same benchmark, workload
  // and environment in the same cycle makes a subject's alert an environment alert.
  std::vector<std::string> reference_providers = {"kernelwatch-reference", "torch", "huggingface"};
  // Runs of one environment closer than this in time belong to one cycle.
  std::chrono::nanoseconds cycle_gap = std::chrono::hours(1);
  // Most keys of an environment breaching in one direction in one cycle: at least this
  // fraction of the keys judged in that cycle, and at least min_keys of them.
  double environment_fraction = 0.5;
  std::size_t environment_min_keys = 3;
};

struct DetectorParameters {
  BandParameters band;
  DriftParameters drift;
  ControlParameters controls;
  ConfirmPolicy confirm = ConfirmPolicy::None;
};

}  // namespace kernelwatch::detectors
