// Synthetic evaluation of the detectors: seeded series (stable, bimodal host noise, steps,
// drift, outliers, gaps) through the band detector and the naive rule (new median outside the
// previous run's p20/p80), with and without confirmation by the next run. Prints markdown.
// Usage: detectors_synthetic_eval [--series N] [--seed S]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "detectors/alert_state.hpp"
#include "detectors/synthetic.hpp"

namespace {

using kernelwatch::detectors::AlertKind;
using kernelwatch::detectors::ConfirmPolicy;
using kernelwatch::detectors::DetectorParameters;
using kernelwatch::detectors::Direction;
using kernelwatch::detectors::KeyLabels;
using kernelwatch::detectors::KeyMonitor;
using kernelwatch::detectors::Observation;
namespace synthetic = kernelwatch::detectors::synthetic;
using synthetic::RunLabel;

// An alert as the evaluation scores it: where it fired, where its level began, which way.
struct Fired {
  std::size_t run = 0;
  std::size_t onset = 0;
  Direction direction = Direction::Regression;
};

std::size_t index_of(const std::vector<Observation>& runs, const std::string& id) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].external_id == id) return i;
  }
  return runs.size();
}

std::vector<Fired> run_band(const synthetic::SyntheticSeries& series, ConfirmPolicy confirm) {
  DetectorParameters parameters;
  parameters.confirm = confirm;
  KeyMonitor monitor(KeyLabels{"synthetic", "p", "w", "e", "", ""}, parameters);
  std::vector<Fired> fired;
  for (std::size_t i = 0; i < series.runs.size(); ++i) {
    auto step = monitor.observe(series.runs[i]);
    if (step.fired() != nullptr) {
      fired.push_back(
          {i, index_of(series.runs, step.fired()->onset.external_id), step.fired()->direction});
    }
  }
  return fired;
}

// The naive rule: outside the previous judged run's [p20, p80]. With confirmation, the next
// judged run must also be outside that same band on the same side.
std::vector<Fired> run_naive(const synthetic::SyntheticSeries& series, ConfirmPolicy confirm) {
  std::vector<Fired> fired;
  const Observation* previous = nullptr;
  struct Pending {
    std::size_t run;
    Direction direction;
    const Observation* reference;
  };
  std::vector<Pending> pending;
  for (std::size_t i = 0; i < series.runs.size(); ++i) {
    const auto& run = series.runs[i];
    if (!run.judgeable()) continue;
    if (!pending.empty()) {
      const auto& p = pending.back();
      const bool above = run.median > p.reference->p80_or_median();
      const bool below = run.median < p.reference->p20_or_median();
      if ((above && p.direction == Direction::Regression) ||
          (below && p.direction == Direction::Improvement)) {
        fired.push_back({i, p.run, p.direction});
      }
      pending.clear();
    }
    if (previous != nullptr) {
      const bool above = run.median > previous->p80_or_median();
      const bool below = run.median < previous->p20_or_median();
      if (above || below) {
        const Direction direction = above ? Direction::Regression : Direction::Improvement;
        if (confirm == ConfirmPolicy::None) {
          fired.push_back({i, i, direction});
        } else {
          pending.push_back({i, direction, previous});
        }
      }
    }
    previous = &run;
  }
  return fired;
}

struct Scenario {
  std::string name;
  synthetic::SeriesSpec spec;
  enum class Goal { Stable, Step, Drift, Outliers } goal = Goal::Stable;
};

struct Score {
  std::size_t stable_runs = 0;
  std::size_t false_alarms = 0;  // alerts whose level began at a stable run
  std::size_t events = 0;        // steps, drifts or outliers
  std::size_t within_one = 0;    // found at the event's run or the next
  std::size_t within_ten = 0;    // found within ten runs
  std::size_t found = 0;         // found before the series ends
  double latency_sum = 0;        // runs from event to alert, over found events
};

void score(const Scenario& scenario, const synthetic::SyntheticSeries& series,
           const std::vector<Fired>& fired, Score& s) {
  for (std::size_t i = 0; i < series.runs.size(); ++i) {
    if (series.labels[i] == RunLabel::Stable) ++s.stable_runs;
  }
  // A false alarm fires at a stable run about a level that began at a stable run. (A drift
  // alert's onset is the start of its trend window, which may be stable: it counts by where it
  // fires.)
  for (const auto& f : fired) {
    if (series.labels[f.run] == RunLabel::Stable && series.labels[f.onset] == RunLabel::Stable) {
      ++s.false_alarms;
    }
  }
  const auto expected = scenario.spec.step >= 0 ? Direction::Regression : Direction::Improvement;
  if (scenario.goal == Scenario::Goal::Step || scenario.goal == Scenario::Goal::Drift) {
    const std::size_t start =
        scenario.goal == Scenario::Goal::Step ? scenario.spec.step_at : scenario.spec.drift_from;
    const Direction want =
        scenario.goal == Scenario::Goal::Step
            ? expected
            : (scenario.spec.drift_per_run >= 0 ? Direction::Regression : Direction::Improvement);
    ++s.events;
    for (const auto& f : fired) {
      if (f.run < start || f.direction != want) continue;
      const std::size_t latency = f.run - start;
      if (latency <= 1) ++s.within_one;
      if (latency <= 10) ++s.within_ten;
      ++s.found;
      s.latency_sum += static_cast<double>(latency);
      break;
    }
  }
  if (scenario.goal == Scenario::Goal::Outliers) {
    for (std::size_t i = 0; i < series.runs.size(); ++i) {
      if (series.labels[i] != RunLabel::Outlier) continue;
      ++s.events;
      for (const auto& f : fired) {
        if (f.onset == i) {
          ++s.within_one;
          ++s.within_ten;
          ++s.found;
          s.latency_sum += static_cast<double>(f.run - i);
          break;
        }
      }
    }
  }
}

std::string rate(std::size_t part, std::size_t whole) {
  if (whole == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

std::string per_thousand(std::size_t part, std::size_t whole) {
  if (whole == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f",
                1000.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t series_count = 1000;
  std::uint64_t seed = 20250101;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--series") == 0)
      series_count = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }

  synthetic::SeriesSpec stable;
  stable.runs = 100;
  synthetic::SeriesSpec bimodal = stable;
  bimodal.host_offset = 0.015;
  bimodal.between_run_sigma = 0.001;

  std::vector<Scenario> scenarios;
  scenarios.push_back({"stable (0.2% between runs, 0.3% within)", stable, Scenario::Goal::Stable});
  {
    auto noisy = stable;
    noisy.between_run_sigma = 0.005;
    noisy.within_run_width = 0.01;
    scenarios.push_back(
        {"stable, noisier (0.5% between, 1% within)", noisy, Scenario::Goal::Stable});
  }
  scenarios.push_back({"bimodal hosts 1.5% apart", bimodal, Scenario::Goal::Stable});
  for (const auto& [base_name, base] : std::vector<std::pair<std::string, synthetic::SeriesSpec>>{
           {"stable", stable}, {"bimodal", bimodal}}) {
    for (double size : {0.02, 0.05, 0.10, 0.30}) {
      for (double sign : {1.0, -1.0}) {
        auto spec = base;
        spec.runs = 60;
        spec.step_at = 40;
        spec.step = sign * size;
        char name[96];
        std::snprintf(name, sizeof name, "step %+.0f%% on %s", sign * size * 100,
                      base_name.c_str());
        scenarios.push_back({name, spec, Scenario::Goal::Step});
      }
    }
  }
  for (const auto& [base_name, base] : std::vector<std::pair<std::string, synthetic::SeriesSpec>>{
           {"stable", stable}, {"bimodal", bimodal}}) {
    auto spec = base;
    spec.runs = 70;
    spec.drift_from = 40;
    spec.drift_per_run = 0.003;
    scenarios.push_back({"drift +0.3%/run on " + base_name, spec, Scenario::Goal::Drift});
  }
  {
    auto spec = stable;
    spec.outlier_probability = 0.03;
    spec.outlier_size = 0.15;
    scenarios.push_back({"single outliers (3% of runs, +-15%)", spec, Scenario::Goal::Outliers});
    auto gaps = bimodal;
    gaps.gap_probability = 0.1;
    gaps.failed_probability = 0.05;
    gaps.inconclusive_probability = 0.05;
    scenarios.push_back(
        {"gaps, failed and inconclusive runs (bimodal)", gaps, Scenario::Goal::Stable});
  }

  const auto started = std::chrono::steady_clock::now();
  std::size_t total_runs = 0;
  std::printf("Seeded synthetic suite: %zu series per scenario, seed %llu.\n\n", series_count,
              static_cast<unsigned long long>(seed));
  std::printf(
      "| scenario | runs | rule | false alarms / 1,000 stable runs | found within 1 run | "
      "found within 10 runs | found by the end | mean runs to alert |\n"
      "|---|---:|---|---:|---:|---:|---:|---:|\n");
  for (const auto& scenario : scenarios) {
    struct Rule {
      const char* name;
      bool band;
      ConfirmPolicy confirm;
    };
    const Rule rules[] = {{"band, confirm none", true, ConfirmPolicy::None},
                          {"band, confirm next", true, ConfirmPolicy::Next},
                          {"naive, confirm none", false, ConfirmPolicy::None},
                          {"naive, confirm next", false, ConfirmPolicy::Next}};
    for (const auto& rule : rules) {
      Score s;
      std::size_t runs = 0;
      for (std::size_t k = 0; k < series_count; ++k) {
        const auto series = synthetic::generate(scenario.spec, seed + k);
        runs += series.runs.size();
        const auto fired =
            rule.band ? run_band(series, rule.confirm) : run_naive(series, rule.confirm);
        score(scenario, series, fired, s);
      }
      total_runs += runs;
      char latency[32] = "-";
      if (s.found > 0) {
        std::snprintf(latency, sizeof latency, "%.1f",
                      s.latency_sum / static_cast<double>(s.found));
      }
      std::printf("| %s | %zu | %s | %s | %s | %s | %s | %s |\n", scenario.name.c_str(), runs,
                  rule.name, per_thousand(s.false_alarms, s.stable_runs).c_str(),
                  rate(s.within_one, s.events).c_str(), rate(s.within_ten, s.events).c_str(),
                  rate(s.found, s.events).c_str(), latency);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("\n%zu runs replayed in %.2f s (%.2f us per run, all four rules).\n", total_runs,
              seconds, 1e6 * seconds / static_cast<double>(total_runs));
  return 0;
}
