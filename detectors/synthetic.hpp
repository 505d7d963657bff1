// Seeded generators of synthetic run histories for evaluating and testing the detectors: stable
// series with within-run spread, bimodal host noise, steps, drift, outliers and gaps. Pure and
// deterministic on every platform (own normal sampler over std::mt19937_64); no global RNG.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detectors/observation.hpp"

namespace kernelwatch::detectors::synthetic {

// A deterministic random source: the same seed gives the same numbers with any compiler.
class Random {
 public:
  explicit Random(std::uint64_t seed);
  [[nodiscard]] double uniform();  // [0, 1)
  [[nodiscard]] double normal();   // mean 0, standard deviation 1 (Box-Muller)

 private:
  std::uint64_t state_[4];
  std::optional<double> spare_;
  [[nodiscard]] std::uint64_t next();
};

struct SeriesSpec {
  std::size_t runs = 60;
  double level_ns = 1.0e6;              // median of the first run before noise
  double between_run_sigma = 0.002;     // relative normal noise of each run's median
  double within_run_width = 0.003;      // typical (p80 - p20) / median of one run
  double host_offset = 0;               // bimodal: the second host runs this much slower (0.015)
  double host_probability = 0.5;        // chance that a run lands on the second host
  std::size_t step_at = 0;              // run index where the step starts; 0 = no step
  double step = 0;                      // relative size (+0.05: 5% slower from step_at on)
  std::size_t drift_from = 0;           // run index where drift starts; 0 = no drift
  double drift_per_run = 0;             // relative change per run (compounded)
  double outlier_probability = 0;       // chance that a run is a lone outlier
  double outlier_size = 0.15;           // its relative size (sign random)
  double failed_probability = 0;        // chance of a failed run (no median)
  double inconclusive_probability = 0;  // chance of an inconclusive run (busy GPU: +40%)
  double gap_probability = 0;           // chance that 2-8 weeks pass before a run, not one
  std::chrono::nanoseconds interval = std::chrono::hours(24 * 7);  // between runs (weekly CI)
  // Where the runs ran. A CI history (the default: weekly runs on whichever host the CI got,
  // the bimodal scenarios' two hosts) names no host and spans several (Observation::
  // unnamed_hosts); otherwise every run names `host` (a daemon rerunning on its own machine).
  bool ci_history = true;
  std::string host = "host-a";
};

enum class RunLabel { Stable, StepOnset, AfterStep, Drifting, Outlier, Failed, Inconclusive };

struct SyntheticSeries {
  std::vector<Observation> runs;  // observed_at ascending, weekly apart unless a gap
  std::vector<RunLabel> labels;   // the truth per run
};

[[nodiscard]] SyntheticSeries generate(const SeriesSpec& spec, std::uint64_t seed);

}  // namespace kernelwatch::detectors::synthetic
