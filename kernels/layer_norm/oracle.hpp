// The float64 LayerNorm oracle every provider is compared against (kernels/harness/check.hpp),
// written from the definition alone. Plain C++ and the standard library.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/types.hpp"

namespace kernelwatch::kernels::oracle {

struct LayerNormForwardResult {
  std::vector<double> y;     // rows x hidden
  std::vector<double> mean;  // rows
  std::vector<double> rstd;  // rows
};

struct LayerNormBackwardResult {
  std::vector<double> dx;       // rows x hidden
  std::vector<double> dweight;  // hidden
  std::vector<double> dbias;    // hidden
  // Per element, the size of the terms dx is summed from: rstd * (|dxhat| + |mean(dxhat)| +
  // |xhat * mean(dxhat * xhat)|). Rounding in an fp32 implementation scales with it, not with
  // dx itself: at small hidden the terms can cancel to a much smaller dx.
  std::vector<double> dx_terms;  // rows x hidden
};

[[nodiscard]] LayerNormForwardResult layer_norm_forward(const std::vector<double>& x,
                                                        const std::vector<double>& weight,
                                                        const std::vector<double>& bias,
                                                        std::int64_t rows, std::int64_t hidden,
                                                        double eps);

// Recomputes mean and rstd from x in float64.
[[nodiscard]] LayerNormBackwardResult layer_norm_backward(const std::vector<double>& x,
                                                          const std::vector<double>& weight,
                                                          const std::vector<double>& dy,
                                                          std::int64_t rows, std::int64_t hidden,
                                                          double eps);

}  // namespace kernelwatch::kernels::oracle
