// How often `kernelwatch compare` fails an unchanged candidate (A/A), and the smallest slowdown it
// finds in 95% of trials, on this machine's CPU: a saxpy loop over 16384 floats (L2-resident),
// timed in chunks of `passes` passes; the candidate does exactly s% more passes of the same work.
// Each trial measures both sides as compare does and takes its verdict:
//  - rounds R: R interleaved rounds (A B, then B A, ...), each side's round the median of 3
//    chunks; detectors::compare_rounds (compare --rounds R).
//  - files: 10 chunks of A, then 10 chunks of B, as two separate runs of a program give them;
//    detectors::compare_times on the samples (compare BASE CANDIDATE).
// In-process, so it measures the statistics on this machine's noise, not a program's start-up.
// Prints markdown for docs/PERFORMANCE.md.
// Usage: detectors_compare_eval [--trials N] [--passes P]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "detectors/compare.hpp"
#include "detectors/statistics.hpp"

namespace {

namespace kd = kernelwatch::detectors;

struct Options {
  int trials = 100;  // per slowdown; A/A gets twice as many
  int passes = 100;
};

std::vector<float> g_x(16384, 1.0f);
std::vector<float> g_y(16384 + 16, 2.0f);

// One chunk of `passes` passes, in ns.
double chunk(int passes) {
  const auto start = std::chrono::steady_clock::now();
  float* y = g_y.data() + 16;
  const float* x = g_x.data();
  for (int p = 0; p < passes; ++p) {
    for (std::size_t i = 0; i < g_x.size(); ++i) y[i] = 1.0001f * x[i] + y[i];
    asm volatile("" : : "r"(y) : "memory");
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

double median_of(int count, int passes) {
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(chunk(passes));
  return kd::median(v);
}

struct Mode {
  const char* name;
  int rounds;  // 0: files
};

// One trial's verdicts at each threshold.
std::vector<kd::CompareVerdict> trial(const Mode& mode, int base_passes, int candidate_passes,
                                      const std::vector<double>& thresholds) {
  std::vector<double> a;
  std::vector<double> b;
  if (mode.rounds > 0) {
    for (int r = 0; r < mode.rounds; ++r) {
      if (r % 2 == 0) {
        a.push_back(median_of(3, base_passes));
        b.push_back(median_of(3, candidate_passes));
      } else {
        b.push_back(median_of(3, candidate_passes));
        a.push_back(median_of(3, base_passes));
      }
    }
  } else {
    for (int i = 0; i < 10; ++i) a.push_back(chunk(base_passes));
    for (int i = 0; i < 10; ++i) b.push_back(chunk(candidate_passes));
  }
  std::vector<kd::CompareVerdict> out;
  for (const double t : thresholds) {
    kd::CompareOptions o;
    o.threshold = t;
    if (mode.rounds > 0) {
      out.push_back(kd::compare_rounds(a, b, o).verdict);
    } else {
      kd::CaseTimes ta;
      ta.median_ns = kd::median(a);
      ta.samples_ns = a;
      kd::CaseTimes tb;
      tb.median_ns = kd::median(b);
      tb.samples_ns = b;
      out.push_back(kd::compare_times(ta, tb, o).verdict);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const auto value = [&](const char* flag) -> const char* {
      if (std::strcmp(argv[i], flag) != 0 || i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    if (const char* v = value("--trials")) {
      o.trials = std::max(10, std::atoi(v));
    } else if (const char* v2 = value("--passes")) {
      o.passes = std::max(10, std::atoi(v2));
    } else {
      std::fprintf(stderr, "usage: detectors_compare_eval [--trials N] [--passes P]\n");
      return 2;
    }
  }
  const std::vector<double> thresholds{0.0, 0.02, 0.05};
  const std::vector<int> slowdowns{1, 2, 3, 5, 7, 10, 15, 20, 30, 50};
  const Mode modes[] = {{"rounds 5", 5}, {"rounds 10", 10}, {"files (10 + 10 repetitions)", 0}};
  chunk(o.passes * 10);  // warm the caches and the clock
  std::printf(
      "chunk: %d passes over 16384 floats, %.0f us on this machine; %d trials per "
      "slowdown, %d unchanged\n\n",
      o.passes, median_of(9, o.passes) / 1e3, o.trials, 2 * o.trials);
  std::printf("| mode | threshold | A/A failed | ");
  for (const int s : slowdowns) std::printf("+%d%% | ", s);
  std::printf("smallest found in 95%% |\n|---|---|---|");
  for (std::size_t i = 0; i < slowdowns.size(); ++i) std::printf("---|");
  std::printf("---|\n");
  for (const Mode& mode : modes) {
    // Trials outer, slowdowns inner: every slowdown sees the same mix of the machine's moods
    // (this machine's speed moves by tens of percent over seconds).
    std::vector<int> aa(thresholds.size(), 0);
    std::vector<std::vector<int>> found(thresholds.size(), std::vector<int>(slowdowns.size()));
    for (int t = 0; t < o.trials; ++t) {
      for (int twice = 0; twice < 2; ++twice) {
        const auto v = trial(mode, o.passes, o.passes, thresholds);
        for (std::size_t k = 0; k < v.size(); ++k) aa[k] += v[k] == kd::CompareVerdict::Slower;
      }
      for (std::size_t s = 0; s < slowdowns.size(); ++s) {
        const int candidate = o.passes + (o.passes * slowdowns[s] + 50) / 100;
        const auto v = trial(mode, o.passes, candidate, thresholds);
        for (std::size_t k = 0; k < v.size(); ++k) {
          found[k][s] += v[k] == kd::CompareVerdict::Slower;
        }
      }
    }
    for (std::size_t k = 0; k < thresholds.size(); ++k) {
      std::printf("| %s | %g%% | %.1f%% | ", mode.name, thresholds[k] * 100,
                  100.0 * aa[k] / (2.0 * o.trials));
      std::string smallest = "none of these";
      for (std::size_t s = 0; s < slowdowns.size(); ++s) {
        const double rate = 100.0 * found[k][s] / o.trials;
        std::printf("%.0f%% | ", rate);
        if (rate >= 95.0 && smallest == "none of these") {
          smallest = "+" + std::to_string(slowdowns[s]) + "%";
        }
      }
      std::printf("%s |\n", smallest.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
