#include "kernels/layer_norm/oracle.hpp"

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

}  // namespace kernelwatch::kernels::oracle
