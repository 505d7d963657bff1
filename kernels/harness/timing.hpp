// The timing protocol: warm-up by time budget, repetitions by time budget (at least a minimum
// count), a cache flush written before every repetition so a kernel reads from memory. CUDA
// cases are timed with events on the case's stream, CPU cases with steady_clock.
// Plain C++ over the case registry; CUDA stays in cuda_timing.cu.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "core/error.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels {

struct TimingPolicy {
  std::chrono::milliseconds warmup{25};        // spent running the case before timing
  std::chrono::milliseconds repetitions{100};  // of timed kernel time, estimated from warm-up
  int min_repetitions = 10;
  int max_repetitions = 10000;
  // Written before each repetition. CUDA: at least the L2 size (H100/H200: 50/60 MiB).
  // CPU: zero means twice the last-level cache, as the probe reads it from sysfs.
  std::size_t cuda_flush_bytes = std::size_t{256} << 20;
  std::size_t cpu_flush_bytes = 0;
};

struct Timings {
  std::vector<double> samples_ns;  // one per timed repetition
  int warmup_runs = 0;
  std::size_t flush_bytes = 0;  // what was actually written before each repetition
};

// Runs `c` (already prepared) under the policy on its backend.
[[nodiscard]] core::Result<Timings> time_case(Case& c, const TimingPolicy& policy);

// Twice the size of the largest CPU cache sysfs reports, at least 8 MiB; 64 MiB when unknown.
[[nodiscard]] std::size_t default_cpu_flush_bytes();

// The flush buffer size the policy gives on a backend (resolving the CPU default).
[[nodiscard]] std::size_t flush_bytes_for(Backend backend, const TimingPolicy& policy);

// How many repetitions fit the budget given the estimated time of one (clamped to the policy).
[[nodiscard]] int repetitions_for(const TimingPolicy& policy, double estimated_ns);

}  // namespace kernelwatch::kernels
