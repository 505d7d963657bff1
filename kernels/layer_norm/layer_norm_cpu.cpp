// LayerNorm on the CPU: argument checks (shared with the CUDA backend) and both providers. What a
// row computes is here; the loops around it are detail/cpu_rows.hpp's.
#include <array>
#include <cmath>

#include "kernels/detail/cpu_math.hpp"
#include "kernels/detail/cpu_rows.hpp"
#include "kernels/detail/validate.hpp"
#include "kernels/layer_norm/layer_norm.hpp"

namespace kernelwatch::kernels {

using detail::lane_sum;
using detail::load;
using detail::store;

core::Status validate_layer_norm_shape(std::int64_t rows, std::int64_t hidden, DType dtype,
                                       double eps) {
  return detail::validate_rows_hidden_shape("layer_norm", rows, hidden, dtype, eps,
                                            kMaxLayerNormHidden);
}

core::Status validate(const LayerNormForward& a) {
  KW_TRY(detail::expect_rows_hidden("layer_norm forward: x", a.x, kMaxLayerNormHidden));
  const auto t = a.x.type;
  const auto m = a.x.rows;
  const auto n = a.x.cols;
  KW_TRY(detail::expect_tensors({{"layer_norm forward: weight", a.weight, t, 1, n},
                                 {"layer_norm forward: bias", a.bias, t, 1, n},
                                 {"layer_norm forward: y", a.y, t, m, n},
                                 {"layer_norm forward: mean", a.mean, ElementType::Fp32, m, 1},
                                 {"layer_norm forward: rstd", a.rstd, ElementType::Fp32, m, 1}}));
  return detail::expect_eps("layer_norm forward", a.eps);
}

core::Status validate(const LayerNormBackward& a) {
  KW_TRY(detail::expect_rows_hidden("layer_norm backward: x", a.x, kMaxLayerNormHidden));
  const auto t = a.x.type;
  const auto m = a.x.rows;
  const auto n = a.x.cols;
  return detail::expect_tensors({{"layer_norm backward: dy", a.dy, t, m, n},
                                 {"layer_norm backward: weight", a.weight, t, 1, n},
                                 {"layer_norm backward: mean", a.mean, ElementType::Fp32, m, 1},
                                 {"layer_norm backward: rstd", a.rstd, ElementType::Fp32, m, 1},
                                 {"layer_norm backward: dx", a.dx, t, m, n},
                                 {"layer_norm backward: dweight", a.dweight, t, 1, n},
                                 {"layer_norm backward: dbias", a.dbias, t, 1, n}});
}

namespace {

template <class S>
struct ForwardView {
  const S* x;
  const S* w;
  const S* b;
  S* y;
  float* mean;
  float* rstd;
  std::int64_t rows;
  std::int64_t n;
  float eps;

  explicit ForwardView(const LayerNormForward& a)
      : x(static_cast<const S*>(a.x.data)),
        w(static_cast<const S*>(a.weight.data)),
        b(static_cast<const S*>(a.bias.data)),
        y(static_cast<S*>(a.y.data)),
        mean(static_cast<float*>(a.mean.data)),
        rstd(static_cast<float*>(a.rstd.data)),
        rows(a.x.rows),
        n(a.x.cols),
        eps(static_cast<float>(a.eps)) {}
};

template <class S>
float row_mean(const S* xr, std::int64_t n) {
  return lane_sum(n, [xr](std::int64_t i) { return load(xr, i); }) / static_cast<float>(n);
}

template <class S>
float row_rstd(const S* xr, std::int64_t n, float mu, float eps) {
  const float var = lane_sum(n,
                             [xr, mu](std::int64_t i) {
                               const float d = load(xr, i) - mu;
                               return d * d;
                             }) /
                    static_cast<float>(n);
  return 1.0f / std::sqrt(var + eps);
}

// __restrict: rows never overlap, and saying so spares the vectorizer its run-time alias checks.
template <class S>
void normalize_row(const S* __restrict xr, const S* __restrict w, const S* __restrict b,
                   S* __restrict yr, std::int64_t n, float mu, float rs) {
  for (std::int64_t i = 0; i < n; ++i) {
    store(yr, i, (load(xr, i) - mu) * rs * load(w, i) + load(b, i));
  }
}

// One sweep per row: the row stays in L1 between its three loops, so memory sees x once.
template <class S>
void forward_fused(const LayerNormForward& args) {
  const ForwardView<S> v(args);
  detail::for_each_row(v.rows, detail::row_grain(v.n), [&v](std::int64_t r) {
    const S* xr = v.x + r * v.n;
    const float mu = row_mean(xr, v.n);
    const float rs = row_rstd(xr, v.n, mu, v.eps);
    normalize_row(xr, v.w, v.b, v.y + r * v.n, v.n, mu, rs);
    v.mean[r] = mu;
    v.rstd[r] = rs;
  });
}

// Three whole-tensor passes, as mean(), var() and the elementwise affine of a framework.
template <class S>
void forward_reference(const LayerNormForward& args) {
  const ForwardView<S> v(args);
  const std::int64_t grain = detail::row_grain(v.n);
  detail::for_each_row(v.rows, grain,
                       [&v](std::int64_t r) { v.mean[r] = row_mean(v.x + r * v.n, v.n); });
  detail::for_each_row(v.rows, grain, [&v](std::int64_t r) {
    v.rstd[r] = row_rstd(v.x + r * v.n, v.n, v.mean[r], v.eps);
  });
  detail::for_each_row(v.rows, grain, [&v](std::int64_t r) {
    normalize_row(v.x + r * v.n, v.w, v.b, v.y + r * v.n, v.n, v.mean[r], v.rstd[r]);
  });
}

template <class S>
struct BackwardView {
  const S* dy;
  const S* x;
  const S* w;
  const float* mean;
  const float* rstd;
  S* dx;
  S* dw;
  S* db;
  std::int64_t rows;
  std::int64_t n;

  explicit BackwardView(const LayerNormBackward& a)
      : dy(static_cast<const S*>(a.dy.data)),
        x(static_cast<const S*>(a.x.data)),
        w(static_cast<const S*>(a.weight.data)),
        mean(static_cast<const float*>(a.mean.data)),
        rstd(static_cast<const float*>(a.rstd.data)),
        dx(static_cast<S*>(a.dx.data)),
        dw(static_cast<S*>(a.dweight.data)),
        db(static_cast<S*>(a.dbias.data)),
        rows(a.x.rows),
        n(a.x.cols) {}
};

// c1 = mean(xhat * w * dy), c2 = mean(w * dy): dx = (w * dy - (xhat * c1 + c2)) * rstd.
// Two sums in one sweep, 8 fp32 lanes each (both sets fit in SSE registers), chunk sums added
// in order: the summation order depends on n alone.
template <class S>
void row_coefficients(const S* __restrict xr, const S* __restrict dyr, const S* __restrict w,
                      std::int64_t n, float mu, float rs, float& c1, float& c2) {
  constexpr int kWidth = 8;
  float first = 0.0f;
  float second = 0.0f;
  for (std::int64_t chunk = 0; chunk < n; chunk += detail::kSumChunk) {
    const std::int64_t end = std::min(n, chunk + detail::kSumChunk);
    float a[kWidth] = {};
    float b[kWidth] = {};
    std::int64_t i = chunk;
    for (; i + kWidth <= end; i += kWidth) {
      for (int l = 0; l < kWidth; ++l) {
        const float wdy = load(w, i + l) * load(dyr, i + l);
        a[l] += (load(xr, i + l) - mu) * wdy;
        b[l] += wdy;
      }
    }
    float tail_a = 0.0f;
    float tail_b = 0.0f;
    for (; i < end; ++i) {
      const float wdy = load(w, i) * load(dyr, i);
      tail_a += (load(xr, i) - mu) * wdy;
      tail_b += wdy;
    }
    first += (((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))) + tail_a;
    second += (((b[0] + b[4]) + (b[1] + b[5])) + ((b[2] + b[6]) + (b[3] + b[7]))) + tail_b;
  }
  c1 = first * rs / static_cast<float>(n);
  c2 = second / static_cast<float>(n);
}

template <class S>
void row_coefficients(const BackwardView<S>& v, std::int64_t r, float& c1, float& c2) {
  row_coefficients(v.x + r * v.n, v.dy + r * v.n, v.w, v.n, v.mean[r], v.rstd[r], c1, c2);
}

// dx for kRows consecutive rows, plus their contribution to the block's dw/db partials: the
// partials are read and written once per group of rows, not once per row.
template <int kRows, class S>
void dx_and_partials(const S* __restrict x, const S* __restrict dy, const S* __restrict w,
                     S* __restrict dx, float* __restrict pdw, float* __restrict pdb, std::int64_t n,
                     const float* mu, const float* rs, const float* c1, const float* c2) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float wi = load(w, i);
    float dw = 0.0f;
    float db = 0.0f;
    for (int k = 0; k < kRows; ++k) {
      const float g = load(dy, k * n + i);
      const float xhat = (load(x, k * n + i) - mu[k]) * rs[k];
      store(dx, k * n + i, (wi * g - (xhat * c1[k] + c2[k])) * rs[k]);
      dw += g * xhat;
      db += g;
    }
    pdw[i] += dw;
    pdb[i] += db;
  }
}

template <class S>
void dx_row(const S* __restrict xr, const S* __restrict dyr, const S* __restrict w,
            S* __restrict dxr, std::int64_t n, float mu, float rs, float c1, float c2) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float xhat = (load(xr, i) - mu) * rs;
    store(dxr, i, (load(w, i) * load(dyr, i) - (xhat * c1 + c2)) * rs);
  }
}

// One pass over x and dy: dx, and the row block's dw/db partials, from the same loads; then the
// partials reduced in block order.
template <class S>
void backward_fused(const LayerNormBackward& args, float* partials) {
  const BackwardView<S> v(args);
  const std::int64_t n = v.n;
  const auto rows_of_block = [&v, n](std::int64_t begin, std::int64_t end, float* pdw) {
    float* pdb = pdw + n;
    constexpr int kGroup = 4;
    for (std::int64_t r = begin; r < end;) {
      const int rows = end - r >= kGroup ? kGroup : 1;
      float c1[kGroup];
      float c2[kGroup];
      for (int k = 0; k < rows; ++k) row_coefficients(v, r + k, c1[k], c2[k]);
      const std::int64_t at = r * n;
      if (rows == kGroup) {
        dx_and_partials<kGroup>(v.x + at, v.dy + at, v.w, v.dx + at, pdw, pdb, n, v.mean + r,
                                v.rstd + r, c1, c2);
      } else {
        dx_and_partials<1>(v.x + at, v.dy + at, v.w, v.dx + at, pdw, pdb, n, v.mean + r, v.rstd + r,
                           c1, c2);
      }
      r += rows;
    }
  };
  detail::block_partials(v.rows, n, partials, std::array<S*, 2>{v.dw, v.db}, rows_of_block);
}

// dx per row, then a separate column reduction that rereads x and dy, as autograd's
// composite LayerNorm backward does.
template <class S>
void backward_reference(const LayerNormBackward& args) {
  const BackwardView<S> v(args);
  const std::int64_t n = v.n;
  detail::for_each_row(v.rows, detail::row_grain(n), [&v, n](std::int64_t r) {
    float c1 = 0.0f;
    float c2 = 0.0f;
    row_coefficients(v, r, c1, c2);
    dx_row(v.x + r * n, v.dy + r * n, v.w, v.dx + r * n, n, v.mean[r], v.rstd[r], c1, c2);
  });
  detail::column_sums(
      v.rows, n, std::array<S*, 2>{v.dw, v.db},
      [&v, n](std::int64_t r, std::int64_t begin, std::int64_t width, detail::StripSums<2>& sums) {
        const S* xr = v.x + r * n + begin;
        const S* dyr = v.dy + r * n + begin;
        const float mu = v.mean[r];
        const float rs = v.rstd[r];
        for (std::int64_t j = 0; j < width; ++j) {
          const float g = load(dyr, j);
          sums[0][j] += g * ((load(xr, j) - mu) * rs);
          sums[1][j] += g;
        }
      });
}

}  // namespace

std::size_t layer_norm_backward_cpu_workspace_bytes(Provider provider, std::int64_t rows,
                                                    std::int64_t hidden) {
  if (provider == Provider::Reference) return 0;
  return detail::block_partials_bytes(rows, hidden, 2);
}

core::Status layer_norm_forward_cpu(Provider provider, const LayerNormForward& args) {
  KW_TRY(validate(args));
  detail::with_storage(args.x.type, [&]<class S>() {
    provider == Provider::Fused ? forward_fused<S>(args) : forward_reference<S>(args);
  });
  return {};
}

core::Status layer_norm_backward_cpu(Provider provider, const LayerNormBackward& args,
                                     std::span<std::byte> workspace) {
  KW_TRY(validate(args));
  KW_TRY(detail::expect_workspace(
      "layer_norm backward", workspace.size(),
      layer_norm_backward_cpu_workspace_bytes(provider, args.x.rows, args.x.cols)));
  auto* partials = reinterpret_cast<float*>(workspace.data());
  detail::with_storage(args.x.type, [&]<class S>() {
    provider == Provider::Fused ? backward_fused<S>(args, partials) : backward_reference<S>(args);
  });
  return {};
}

}  // namespace kernelwatch::kernels
