// The float64 TVD oracle every provider is compared against (kernels/harness/check.hpp),
// written from the definition alone (no code shared with the providers beyond the Reduction
// enum). Plain C++ and the standard library.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/types.hpp"

namespace kernelwatch::kernels::oracle {

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
