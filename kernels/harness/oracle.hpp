// The float64 oracle every provider is compared against: by the kernel tests, and by the
// harness's correctness gate before a run is timed. Written from the definitions alone (no code
// shared with the providers beyond the Reduction enum). Plain C++ and the standard library.
#pragma once

#include <cstdint>
#include <optional>
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

struct TvdForwardResult {
  std::vector<double> loss;  // 1 value, or tokens x vocab for Reduction::None
  std::vector<double> grad;  // tokens x vocab
};

// labels: empty for "no labels".
[[nodiscard]] TvdForwardResult tvd_forward(const std::vector<double>& p,
                                           const std::vector<double>& q,
                                           const std::vector<std::int64_t>& labels,
                                           std::int64_t tokens, std::int64_t vocab,
                                           Reduction reduction, std::int64_t ignore_index);

// grad_output: one value, or tokens x vocab.
[[nodiscard]] std::vector<double> tvd_backward(const std::vector<double>& grad,
                                               const std::vector<double>& grad_output);

}  // namespace kernelwatch::kernels::oracle
