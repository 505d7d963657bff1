// Detection quality on young keys (issue #36): seeded histories of a new key's first runs on one
// quiet host, as a daemon rerunning a new `command` entry or a new GPU makes them, through the
// key detector with the daemon's confirmation (the next run) and alone. Per median (5 us to
// 10 ms): the steps of 5/10/30% found within 2 runs of the step, and false alarms per 1,000
// stable runs. Prints markdown (docs/DETECTION.md, "Young keys").
// Usage: detectors_young_keys_eval [--series N] [--seed S] [--runs R] [--prior auto|always]

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "detectors/alert_state.hpp"
#include "detectors/synthetic.hpp"

namespace {

using kernelwatch::detectors::ConfirmPolicy;
using kernelwatch::detectors::DetectorParameters;
using kernelwatch::detectors::Direction;
using kernelwatch::detectors::KeyLabels;
using kernelwatch::detectors::KeyMonitor;
using kernelwatch::detectors::YoungPrior;
namespace synthetic = kernelwatch::detectors::synthetic;

struct Options {
  std::size_t series = 1000;
  std::uint64_t seed = 36;
  std::size_t runs = 40;
  YoungPrior prior = YoungPrior::Auto;
};

struct Tally {
  std::size_t steps = 0;
  std::size_t found = 0;  // an alert the step's way fired at the step's run or the next
  std::size_t stable_runs = 0;
  std::size_t false_alarms = 0;  // an alert fired at a run before the step (or of a stable series)

  void add(const Tally& t) {
    steps += t.steps;
    found += t.found;
    stable_runs += t.stable_runs;
    false_alarms += t.false_alarms;
  }
};

// One series: a key's first `runs` hourly runs on one host; within-run p20-p80 width 0.3-2%,
// run-to-run noise 0.2-1% (uniform per series), a step (0: none) at a run of 6..20.
Tally run_series(const Options& o, double level_ns, double step, ConfirmPolicy confirm,
                 std::uint64_t seed) {
  synthetic::Random draw(seed ^ 0x9e3779b97f4a7c15ULL);
  synthetic::SeriesSpec spec;
  spec.runs = o.runs;
  spec.level_ns = level_ns;
  spec.within_run_width = 0.003 + 0.017 * draw.uniform();
  spec.between_run_sigma = 0.002 + 0.008 * draw.uniform();
  spec.interval = std::chrono::hours(1);
  spec.ci_history = false;
  const std::size_t step_at = 6 + static_cast<std::size_t>(draw.uniform() * 15);
  if (step != 0) {
    spec.step_at = step_at;
    spec.step = step;
  }
  const auto series = synthetic::generate(spec, seed);
  DetectorParameters parameters;
  parameters.confirm = confirm;
  parameters.band.young_prior = o.prior;
  KeyMonitor monitor(KeyLabels{"young", "p", "w", "e", "", ""}, parameters);
  Tally t;
  const std::size_t stable_until = step != 0 ? step_at : series.runs.size();
  t.stable_runs = stable_until;
  t.steps = step != 0 ? 1 : 0;
  const Direction way = step > 0 ? Direction::Regression : Direction::Improvement;
  for (std::size_t i = 0; i < series.runs.size(); ++i) {
    const auto observed = monitor.observe(series.runs[i]);
    const auto* fired = observed.fired();
    if (fired == nullptr) continue;
    if (i < stable_until) {
      ++t.false_alarms;
    } else if (step != 0 && i <= step_at + 1 && fired->direction == way) {
      t.found = 1;
    }
  }
  return t;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--series") {
      o.series = std::strtoull(value, nullptr, 10);
    } else if (flag == "--seed") {
      o.seed = std::strtoull(value, nullptr, 10);
    } else if (flag == "--runs") {
      o.runs = std::strtoull(value, nullptr, 10);
    } else if (flag == "--prior") {
      o.prior = std::strcmp(value, "always") == 0 ? YoungPrior::Always : YoungPrior::Auto;
    } else {
      std::fprintf(stderr, "usage: %s [--series N] [--seed S] [--runs R] [--prior auto|always]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (o.series == 0 || o.runs < 22) {
    std::fprintf(stderr, "--series must be positive and --runs at least 22\n");
    std::exit(2);
  }
  return o;
}

std::string share(std::size_t part, std::size_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", whole == 0 ? 0.0 : 100.0 * part / whole);
  return text;
}

std::string per_thousand(std::size_t part, std::size_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", whole == 0 ? 0.0 : 1000.0 * part / whole);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const double medians[] = {5e3, 30e3, 100e3, 1.5e6, 10e6};
  const char* names[] = {"5 us", "30 us", "100 us", "1.5 ms", "10 ms"};
  const double steps[] = {0.05, -0.05, 0.10, -0.10, 0.30, -0.30};
  std::printf("young keys: %zu series per cell, %zu hourly runs, seed %llu, prior %s\n\n", o.series,
              o.runs, static_cast<unsigned long long>(o.seed),
              o.prior == YoungPrior::Always ? "always" : "auto");
  for (const ConfirmPolicy confirm : {ConfirmPolicy::Next, ConfirmPolicy::None}) {
    std::printf("confirm %s\n\n", confirm == ConfirmPolicy::Next ? "next" : "none");
    std::printf(
        "| median | +5%% | -5%% | +10%% | -10%% | +30%% | -30%% | false alarms / 1,000 stable "
        "runs |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (std::size_t m = 0; m < std::size(medians); ++m) {
      std::printf("| %s |", names[m]);
      Tally stable_total;
      for (std::size_t s = 0; s < std::size(steps); ++s) {
        Tally cell;
        for (std::size_t k = 0; k < o.series; ++k) {
          const std::uint64_t seed = o.seed * 1'000'003 + m * 100'000'007 + s * 10'000'019 + k;
          const Tally t = run_series(o, medians[m], steps[s], confirm, seed);
          cell.add(t);
        }
        stable_total.stable_runs += cell.stable_runs;
        stable_total.false_alarms += cell.false_alarms;
        std::printf(" %s |", share(cell.found, cell.steps).c_str());
      }
      for (std::size_t k = 0; k < o.series; ++k) {
        const std::uint64_t seed = o.seed * 1'000'003 + m * 100'000'007 + 99 * 10'000'019 + k;
        const Tally t = run_series(o, medians[m], 0, confirm, seed);
        stable_total.stable_runs += t.stable_runs;
        stable_total.false_alarms += t.false_alarms;
      }
      std::printf(" %s (%zu in %zu) |\n",
                  per_thousand(stable_total.false_alarms, stable_total.stable_runs).c_str(),
                  stable_total.false_alarms, stable_total.stable_runs);
    }
    std::printf("\n");
  }
  return 0;
}
