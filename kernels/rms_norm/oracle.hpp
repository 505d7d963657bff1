// The float64 RMSNorm oracle every provider is compared against
// (kernels/harness/check.hpp), written from the definition alone. Plain C++ and
// the standard library.
#pragma once

#include <cstdint>
#include <vector>

namespace kernelwatch::kernels::oracle {

struct RmsNormForwardResult {
  std::vector<double> y;     // rows x hidden
  std::vector<double> rstd;  // rows
};

struct RmsNormBackwardResult {
  std::vector<double> dx;       // rows x hidden
  std::vector<double> dweight;  // hidden
  // Per element, the size of the terms dx is summed from: rstd * (|dy * w| +
  // |xhat * c|), c the row's mean(dy * w * xhat); fp32 rounding scales with it,
  // not with dx (they can cancel).
  std::vector<double> dx_terms;  // rows x hidden
};

[[nodiscard]] RmsNormForwardResult rms_norm_forward(const std::vector<double>& x,
                                                    const std::vector<double>& weight,
                                                    std::int64_t rows, std::int64_t hidden,
                                                    double eps);

// Recomputes rstd from x in float64.
[[nodiscard]] RmsNormBackwardResult rms_norm_backward(const std::vector<double>& x,
                                                      const std::vector<double>& weight,
                                                      const std::vector<double>& dy,
                                                      std::int64_t rows, std::int64_t hidden,
                                                      double eps);

}  // namespace kernelwatch::kernels::oracle
