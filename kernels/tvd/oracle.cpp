#include "kernels/tvd/oracle.hpp"

#include <cmath>

namespace kernelwatch::kernels::oracle {

namespace {
std::size_t at(std::int64_t row, std::int64_t col, std::int64_t cols) {
  return static_cast<std::size_t>(row * cols + col);
}
}  // namespace

TvdForwardResult tvd_forward(const std::vector<double>& p, const std::vector<double>& q,
                             const std::vector<std::int64_t>& labels, std::int64_t tokens,
                             std::int64_t vocab, Reduction reduction, std::int64_t ignore_index) {
  std::int64_t kept = 0;
  std::vector<bool> keep(static_cast<std::size_t>(tokens), true);
  for (std::int64_t r = 0; r < tokens; ++r) {
    if (!labels.empty() && labels[static_cast<std::size_t>(r)] == ignore_index) {
      keep[static_cast<std::size_t>(r)] = false;
    } else {
      ++kept;
    }
  }
  double scale = 1.0;
  if (reduction == Reduction::BatchMean) scale = kept == 0 ? 0.0 : 1.0 / static_cast<double>(kept);
  if (reduction == Reduction::Mean) {
    scale = kept == 0 ? 0.0 : 1.0 / (static_cast<double>(kept) * static_cast<double>(vocab));
  }
  TvdForwardResult out;
  out.grad.assign(p.size(), 0.0);
  const bool none = reduction == Reduction::None;
  out.loss.assign(none ? p.size() : 1, 0.0);
  double total = 0.0;
  for (std::int64_t r = 0; r < tokens; ++r) {
    if (!keep[static_cast<std::size_t>(r)]) continue;
    for (std::int64_t c = 0; c < vocab; ++c) {
      const std::size_t i = at(r, c, vocab);
      const double d = p[i] - q[i];
      const double sign = d > 0.0 ? 1.0 : (d < 0.0 ? -1.0 : 0.0);
      out.grad[i] = 0.5 * sign * scale;
      if (none) {
        out.loss[i] = 0.5 * std::fabs(d);
      } else {
        total += 0.5 * std::fabs(d);
      }
    }
  }
  if (!none) out.loss[0] = total * scale;
  return out;
}

std::vector<double> tvd_backward(const std::vector<double>& grad,
                                 const std::vector<double>& grad_output) {
  std::vector<double> dp(grad.size());
  for (std::size_t i = 0; i < grad.size(); ++i) {
    dp[i] = grad[i] * (grad_output.size() == 1 ? grad_output[0] : grad_output[i]);
  }
  return dp;
}

}  // namespace kernelwatch::kernels::oracle
