// Order statistics of timed repetitions: quantiles with linear interpolation between order
// statistics (the definition torch.quantile uses by default) and a run summary.
// Plain C++, no I/O.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

namespace kernelwatch::kernels {

// q in [0, 1] over values sorted ascending (not empty): position q*(n-1), interpolated between
// the two order statistics around it.
[[nodiscard]] double quantile_sorted(std::span<const double> sorted, double q);

struct Summary {
  std::size_t count = 0;
  std::chrono::nanoseconds min{0};
  std::chrono::nanoseconds p20{0};
  std::chrono::nanoseconds median{0};
  std::chrono::nanoseconds p80{0};
  std::chrono::nanoseconds max{0};
  double mean_ns = 0;
};

// Summarizes timings in nanoseconds (may be fractional: CUDA events resolve ~0.5 us, steady
// clock 1 ns); quantiles are rounded to the nearest ns. samples must not be empty.
[[nodiscard]] Summary summarize(std::vector<double> samples_ns);

}  // namespace kernelwatch::kernels
