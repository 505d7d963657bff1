// The measurement harness's own cost per repetition on this machine: the timer read pair inside
// the timed region, and what each repetition costs outside it (the cache flush), measured on a
// 1 x 1 LayerNorm whose kernel time is the CPU thread pool's dispatch.
// Usage: kw_bench_harness_overhead
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "kernels/harness/statistics.hpp"
#include "kernels/harness/timing.hpp"

int main() {
  using namespace kernelwatch::kernels;
  using Clock = std::chrono::steady_clock;

  // 1. Two consecutive clock reads: the floor under every CPU sample.
  std::vector<double> pair_ns;
  for (int i = 0; i < 100000; ++i) {
    const auto a = Clock::now();
    const auto b = Clock::now();
    pair_ns.push_back(std::chrono::duration<double, std::nano>(b - a).count());
  }
  const Summary timer = summarize(pair_ns);

  // 2. A whole timed run of the smallest case: wall time per repetition vs the timed samples.
  CaseSpec spec;
  spec.rows = 1;
  spec.cols = 1;
  auto c =
      create_case({KernelRef("layer_norm"), Pass::Forward, Provider::Fused, Backend::Cpu}, spec);
  if (!c || !(*c)->prepare(1)) return 1;
  TimingPolicy policy;
  policy.warmup = std::chrono::milliseconds(25);
  policy.repetitions = std::chrono::milliseconds(20);
  policy.max_repetitions = 200;
  const auto start = Clock::now();
  auto timings = time_case(**c, policy);
  const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  if (!timings) return 1;
  const Summary s = summarize(timings->samples_ns);
  const double runs = static_cast<double>(timings->warmup_runs) + static_cast<double>(s.count);
  const double per_rep_ns = wall_ns / runs;

  std::printf("timer: steady_clock read pair median %lld ns, p80 %lld ns\n",
              static_cast<long long>(timer.median.count()),
              static_cast<long long>(timer.p80.count()));
  std::printf("flush: %zu MiB read before each repetition\n", timings->flush_bytes >> 20);
  std::printf(
      "1x1 LayerNorm: timed median %lld ns; wall per repetition %.0f us (%d warm-up + %zu timed)\n",
      static_cast<long long>(s.median.count()), per_rep_ns / 1e3, timings->warmup_runs, s.count);
  std::printf("overhead outside the timed region per repetition: %.0f us\n",
              (per_rep_ns - static_cast<double>(s.mean_ns)) / 1e3);
  return 0;
}
