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

// Whether a young key's band carries the cross-host prior (young_jitter).
enum class YoungPrior {
  Auto,    // only when the key's runs come from several hosts (their `host` labels differ, or a
           // source whose runs name no host spans several: detectors::spans_unnamed_hosts)
  Always,  // every young key (kernelwatch 0.1's band)
  Never,   // no young key
};

struct BandParameters {
  // Baseline: the newest `window` accepted runs of the key's current segment.
  std::size_t window = 20;
  // Fewer accepted runs than this: insufficient data ...
  std::size_t min_history = 5;
  // ... except that a change of at least big_step_threshold (and beyond the band's margin that
  // way) may be judged from this many.
  std::size_t big_step_min_history = 2;
  double big_step_threshold = 0.20;
  // A key is trusted once it has judged this many runs: by then its range and its own
  // excursions show its host-to-host noise (15 runs of a 50/50 two-host mix all land on one
  // host with probability 2^-14).
  std::size_t trust_runs = 15;
  // The band reaches at least this fraction of the centre beyond the baseline's extreme medians:
  // young keys min_relative_margin (a short history may not have shown the second host yet)...
  double min_relative_margin = 0.02;
  // ... and young_jitter / centre (short, launch-bound kernels swing tens of microseconds
  // between CI hosts before their own history can say so) ...
  std::chrono::nanoseconds young_jitter{50'000};
  // ... trusted keys trusted_relative_margin: a 2% step on a quiet (0.2%) series is 10 sigma.
  double trusted_relative_margin = 0.01;
  // The jitter is a prior about hosts a key has not shown yet; a young key of one host (a daemon
  // rerunning on its own machine) gets its band from evidence instead: a Student t prediction
  // interval of the next median (log scale) around the centre, from the run-to-run noise of its
  // baseline medians pooled with its runs' own spread ((log p80 - log p20) / 1.6832, a normal
  // sigma), which counts for young_spread_weight degrees of freedom, so that two runs already
  // give a finite interval; each side holds a stable run with probability 1 - young_tail when a
  // breach must be confirmed by the next run (ConfirmPolicy::Next, the daemon's rerun), and
  // 1 - young_tail_alone when a breach alerts by itself. A run whose own spread is wider than
  // the baseline's is judged with its excess too. The range margin of such a key is
  // max(min_relative_margin, young_resolution / centre): the timers' resolution, not a host mix.
  YoungPrior young_prior = YoungPrior::Auto;
  std::chrono::nanoseconds young_resolution{100};
  double young_spread_weight = 2.0;
  double young_tail = 0.005;
  double young_tail_alone = 0.0005;
  // Around the centre the band also reaches spread_factor x 1.4826 x MAD of the baseline
  // medians (about 3 sigma) ...
  double spread_factor = 3.0;
  // ... and noise_factor x the one-sided noise_quantile excursion of the key's own settled runs
  // (the newest noise_window residuals log(median / centre) of accepted runs, unconfirmed
  // breaches and young steps that reverted; used from noise_min_runs on): the levels a key
  // visits and leaves, which the range of the accepted runs alone never learns.
  std::size_t noise_window = 20;
  std::size_t noise_min_runs = 4;
  double noise_quantile = 0.75;
  double noise_factor = 2.0;
  // A breach at least this far from the centre survives one run back in the band and may be
  // confirmed by the run after it (a run that re-ran an older commit must not hide a real step).
  double late_confirm_threshold = 0.05;
  // A level that persists is a step, whatever a few excursions let the band reach: the newest
  // persist_runs judged runs of the segment (0: off) all beyond every accepted run of the level
  // but the persist_trim most extreme that way (plus the range margin), their median at least
  // persist_min_change and persist_spread x 1.4826 x MAD (of all the level's judged runs) from
  // its centre, where the band reaches persist_band_factor times that far (log scale).
  std::size_t persist_runs = 3;
  std::size_t persist_trim = 2;
  double persist_spread = 3.0;
  double persist_min_change = 0.10;
  double persist_band_factor = 2.0;
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
  // Providers that serve as controls (the references): compared with the subject providers
  // (every other provider) of the same benchmark, workload and environment.
  std::vector<std::string> reference_providers = {"kernelwatch-reference", "torch", "huggingface",
                                                  "torch_compile", "deepspeed_tiled"};
  // Runs of one environment closer than this in time belong to one cycle.
  std::chrono::nanoseconds cycle_gap = std::chrono::hours(1);
  // Cycles remembered per environment (a step's onset is at most two runs back).
  std::size_t kept_cycles = 4;
  // A counterpart "moved" when it breached its band, or changed this much against its centre.
  double moved_threshold = 0.05;
  // Host shift (references only): of the references whose centre is within
  // host_duration_ratio of this key's, at least host_fraction (and host_min_keys) moved the same
  // way by at least host_share of this key's move (log scale).
  double host_duration_ratio = 4.0;
  double host_share = 0.25;
  double host_fraction = 0.15;
  std::size_t host_min_keys = 3;
  // Incidents by cause: when at least incident_min_keys keys of one environment step in one
  // cycle (both ways counted), every one of them joins one incident, whatever its provider ...
  std::size_t incident_min_keys = 4;
  // ... except a subject whose move is clearly its own: beyond a reference on its workload by
  // own_excess (log scale) more than the cycle's other subjects moved beyond theirs (only in a
  // cycle whose subjects typically moved with their references, within own_excess), beyond its
  // own band's margin, and by at least own_share of its own move (log scale).
  double own_excess = 0.10;
  double own_share = 0.5;
};

struct DetectorParameters {
  BandParameters band;
  DriftParameters drift;
  ControlParameters controls;
  ConfirmPolicy confirm = ConfirmPolicy::None;
};

}  // namespace kernelwatch::detectors
