#include "detectors/synthetic.hpp"

#include <cmath>
#include <numbers>
#include <string>

namespace kernelwatch::detectors::synthetic {
namespace {

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

// xoshiro256** seeded through splitmix64: fixed, documented algorithms, so the suite's numbers
// are the same on every platform (std::normal_distribution is not).
Random::Random(std::uint64_t seed) {
  for (auto& word : state_) word = splitmix(seed);
}

std::uint64_t Random::next() {
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Random::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Random::normal() {
  if (spare_) {
    const double value = *spare_;
    spare_.reset();
    return value;
  }
  double u = 0;
  while (u <= 0) u = uniform();
  const double v = uniform();
  const double radius = std::sqrt(-2 * std::log(u));
  spare_ = radius * std::sin(2 * std::numbers::pi * v);
  return radius * std::cos(2 * std::numbers::pi * v);
}

SyntheticSeries generate(const SeriesSpec& spec, std::uint64_t seed) {
  Random random(seed);
  SyntheticSeries series;
  series.runs.reserve(spec.runs);
  series.labels.reserve(spec.runs);
  core::Timestamp at{std::chrono::sys_days{std::chrono::year{2025} / 1 / 6}};
  const core::SharedPlacement placement =
      spec.ci_history ? core::SharedPlacement{}
                      : core::SharedPlacement{core::Placement{spec.host, "", "", ""}};
  double level = spec.level_ns;
  for (std::size_t i = 0; i < spec.runs; ++i) {
    // Draw every number in a fixed order whatever the spec, so scenarios share their noise.
    const double noise = random.normal();
    const double host = random.uniform();
    const double width_noise = random.normal();
    const double outlier = random.uniform();
    const double outlier_sign = random.uniform();
    const double failure = random.uniform();
    const double gap = random.uniform();
    const double gap_weeks = random.uniform();

    at += spec.interval;
    if (i > 0 && gap < spec.gap_probability) {
      at += spec.interval * (1 + static_cast<int>(gap_weeks * 7));
    }
    RunLabel label = RunLabel::Stable;
    if (spec.drift_from > 0 && i >= spec.drift_from) {
      level *= 1 + spec.drift_per_run;
      label = RunLabel::Drifting;
    }
    double value = level;
    if (spec.step_at > 0 && i >= spec.step_at) {
      value *= 1 + spec.step;
      label = i == spec.step_at ? RunLabel::StepOnset : RunLabel::AfterStep;
    }
    if (host < spec.host_probability) value *= 1 + spec.host_offset;
    value *= 1 + spec.between_run_sigma * noise;
    Observation run;
    run.external_id = "synthetic/" + std::to_string(seed) + "/" + std::to_string(i);
    run.observed_at = at;
    run.implementation_version = "1.0.0";
    run.unnamed_hosts = spec.ci_history;
    run.placement = placement;
    if (label == RunLabel::Stable && outlier < spec.outlier_probability) {
      value *= 1 + (outlier_sign < 0.5 ? -spec.outlier_size : spec.outlier_size);
      label = RunLabel::Outlier;
    }
    if (failure < spec.failed_probability) {
      run.status = core::RunStatus::RuntimeError;
      label = RunLabel::Failed;
      value = 0;
    } else if (failure < spec.failed_probability + spec.inconclusive_probability) {
      run.status = core::RunStatus::IncompleteEvidence;
      label = RunLabel::Inconclusive;
      value *= 1.4;
    }
    const double width = spec.within_run_width * std::exp(0.3 * width_noise);
    run.median = std::chrono::nanoseconds(std::llround(value));
    run.p20 = std::chrono::nanoseconds(std::llround(value * (1 - 0.4 * width)));
    run.p80 = std::chrono::nanoseconds(std::llround(value * (1 + 0.6 * width)));
    series.runs.push_back(std::move(run));
    series.labels.push_back(label);
  }
  return series;
}

}  // namespace kernelwatch::detectors::synthetic
