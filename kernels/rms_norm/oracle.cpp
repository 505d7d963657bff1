#include "kernels/rms_norm/oracle.hpp"

#include <cmath>

namespace kernelwatch::kernels::oracle {

namespace {
std::size_t at(std::int64_t row, std::int64_t col, std::int64_t cols) {
  return static_cast<std::size_t>(row * cols + col);
}
}  // namespace

RmsNormForwardResult rms_norm_forward(const std::vector<double>& x,
                                      const std::vector<double>& weight, std::int64_t rows,
                                      std::int64_t hidden, double eps) {
  RmsNormForwardResult out;
  out.y.resize(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (std::int64_t c = 0; c < hidden; ++c) squares += x[at(r, c, hidden)] * x[at(r, c, hidden)];
    const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(hidden) + eps);
    for (std::int64_t c = 0; c < hidden; ++c) {
      out.y[at(r, c, hidden)] = x[at(r, c, hidden)] * rstd * weight[static_cast<std::size_t>(c)];
    }
    out.rstd.push_back(rstd);
  }
  return out;
}

RmsNormBackwardResult rms_norm_backward(const std::vector<double>& x,
                                        const std::vector<double>& weight,
                                        const std::vector<double>& dy, std::int64_t rows,
                                        std::int64_t hidden, double eps) {
  // y = xhat * w, xhat = x * rstd: dxhat = dy * w; dx = rstd * (dxhat - xhat *
  // mean(dxhat * xhat)).
  const auto forward = rms_norm_forward(x, weight, rows, hidden, eps);
  RmsNormBackwardResult out;
  out.dx.resize(x.size());
  out.dx_terms.resize(x.size());
  out.dweight.assign(static_cast<std::size_t>(hidden), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double rstd = forward.rstd[static_cast<std::size_t>(r)];
    double c = 0.0;
    for (std::int64_t k = 0; k < hidden; ++k) {
      c += dy[at(r, k, hidden)] * weight[static_cast<std::size_t>(k)] * x[at(r, k, hidden)] * rstd;
    }
    c /= static_cast<double>(hidden);
    for (std::int64_t k = 0; k < hidden; ++k) {
      const double xhat = x[at(r, k, hidden)] * rstd;
      const double dxhat = dy[at(r, k, hidden)] * weight[static_cast<std::size_t>(k)];
      out.dx[at(r, k, hidden)] = rstd * (dxhat - xhat * c);
      out.dx_terms[at(r, k, hidden)] = rstd * (std::fabs(dxhat) + std::fabs(xhat * c));
      out.dweight[static_cast<std::size_t>(k)] += dy[at(r, k, hidden)] * xhat;
    }
  }
  return out;
}

}  // namespace kernelwatch::kernels::oracle
