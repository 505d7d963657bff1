#include "kernels/harness/oracle.hpp"

#include <cmath>

namespace kernelwatch::kernels::oracle {

namespace {
std::size_t at(std::int64_t row, std::int64_t col, std::int64_t cols) {
  return static_cast<std::size_t>(row * cols + col);
}
}  // namespace

LayerNormForwardResult layer_norm_forward(const std::vector<double>& x,
                                          const std::vector<double>& weight,
                                          const std::vector<double>& bias, std::int64_t rows,
                                          std::int64_t hidden, double eps) {
  LayerNormForwardResult out;
  out.y.resize(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (std::int64_t c = 0; c < hidden; ++c) sum += x[at(r, c, hidden)];
    const double mean = sum / static_cast<double>(hidden);
    double var = 0.0;
    for (std::int64_t c = 0; c < hidden; ++c) {
      const double d = x[at(r, c, hidden)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(hidden);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (std::int64_t c = 0; c < hidden; ++c) {
      out.y[at(r, c, hidden)] =
          (x[at(r, c, hidden)] - mean) * rstd * weight[static_cast<std::size_t>(c)] +
          bias[static_cast<std::size_t>(c)];
    }
    out.mean.push_back(mean);
    out.rstd.push_back(rstd);
  }
  return out;
}

LayerNormBackwardResult layer_norm_backward(const std::vector<double>& x,
                                            const std::vector<double>& weight,
                                            const std::vector<double>& dy, std::int64_t rows,
                                            std::int64_t hidden, double eps) {
  // y = xhat * w + b, xhat = (x - mean) * rstd:
  // dxhat = dy * w; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
  const std::vector<double> zeros(static_cast<std::size_t>(hidden), 0.0);
  const auto forward = layer_norm_forward(x, weight, zeros, rows, hidden, eps);
  LayerNormBackwardResult out;
  out.dx.resize(x.size());
  out.dx_terms.resize(x.size());
  out.dweight.assign(static_cast<std::size_t>(hidden), 0.0);
  out.dbias.assign(static_cast<std::size_t>(hidden), 0.0);
  const auto n = static_cast<double>(hidden);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double mean = forward.mean[static_cast<std::size_t>(r)];
    const double rstd = forward.rstd[static_cast<std::size_t>(r)];
    double mean_dxhat = 0.0;
    double mean_dxhat_xhat = 0.0;
    for (std::int64_t c = 0; c < hidden; ++c) {
      const double xhat = (x[at(r, c, hidden)] - mean) * rstd;
      const double dxhat = dy[at(r, c, hidden)] * weight[static_cast<std::size_t>(c)];
      mean_dxhat += dxhat / n;
      mean_dxhat_xhat += dxhat * xhat / n;
    }
    for (std::int64_t c = 0; c < hidden; ++c) {
      const double xhat = (x[at(r, c, hidden)] - mean) * rstd;
      const double g = dy[at(r, c, hidden)];
      const double dxhat = g * weight[static_cast<std::size_t>(c)];
      out.dx[at(r, c, hidden)] = rstd * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
      out.dx_terms[at(r, c, hidden)] =
          rstd * (std::fabs(dxhat) + std::fabs(mean_dxhat) + std::fabs(xhat * mean_dxhat_xhat));
      out.dweight[static_cast<std::size_t>(c)] += g * xhat;
      out.dbias[static_cast<std::size_t>(c)] += g;
    }
  }
  return out;
}

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
