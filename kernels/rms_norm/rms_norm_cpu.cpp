// RMSNorm on the CPU: argument checks and both providers. Fused: one sweep per
// row forward; one pass over x and dy backward (dx plus per-block dweight
// partials, then a fixed-order column reduction). Reference: separate
// whole-tensor passes, as a framework's composite ops run. What a row computes
// is here; the loops around it are detail/cpu_rows.hpp's.
#include <array>
#include <cmath>

#include "kernels/detail/cpu_math.hpp"
#include "kernels/detail/cpu_rows.hpp"
#include "kernels/detail/validate.hpp"
#include "kernels/rms_norm/rms_norm.hpp"

namespace kernelwatch::kernels {

using detail::lane_sum;
using detail::load;
using detail::store;

core::Status validate_rms_norm_shape(std::int64_t rows, std::int64_t hidden, DType dtype,
                                     double eps) {
  return detail::validate_rows_hidden_shape("rms_norm", rows, hidden, dtype, eps,
                                            kMaxRmsNormHidden);
}

core::Status validate(const RmsNormForward& a) {
  KW_TRY(detail::expect_rows_hidden("rms_norm forward: x", a.x, kMaxRmsNormHidden));
  const auto t = a.x.type;
  const auto m = a.x.rows;
  const auto n = a.x.cols;
  KW_TRY(detail::expect_tensors({{"rms_norm forward: weight", a.weight, t, 1, n},
                                 {"rms_norm forward: y", a.y, t, m, n},
                                 {"rms_norm forward: rstd", a.rstd, ElementType::Fp32, m, 1}}));
  return detail::expect_eps("rms_norm forward", a.eps);
}

core::Status validate(const RmsNormBackward& a) {
  KW_TRY(detail::expect_rows_hidden("rms_norm backward: x", a.x, kMaxRmsNormHidden));
  const auto t = a.x.type;
  const auto m = a.x.rows;
  const auto n = a.x.cols;
  return detail::expect_tensors({{"rms_norm backward: dy", a.dy, t, m, n},
                                 {"rms_norm backward: weight", a.weight, t, 1, n},
                                 {"rms_norm backward: rstd", a.rstd, ElementType::Fp32, m, 1},
                                 {"rms_norm backward: dx", a.dx, t, m, n},
                                 {"rms_norm backward: dweight", a.dweight, t, 1, n}});
}

namespace {

template <class S>
float row_rstd(const S* xr, std::int64_t n, float eps) {
  const float squares = lane_sum(n, [xr](std::int64_t i) {
    const float v = load(xr, i);
    return v * v;
  });
  return 1.0f / std::sqrt(squares / static_cast<float>(n) + eps);
}

template <class S>
void normalize_row(const S* __restrict xr, const S* __restrict w, S* __restrict yr, std::int64_t n,
                   float rs) {
  for (std::int64_t i = 0; i < n; ++i) store(yr, i, load(xr, i) * rs * load(w, i));
}

template <class S>
struct ForwardView {
  const S* x;
  const S* w;
  S* y;
  float* rstd;
  std::int64_t rows;
  std::int64_t n;
  float eps;

  explicit ForwardView(const RmsNormForward& a)
      : x(static_cast<const S*>(a.x.data)),
        w(static_cast<const S*>(a.weight.data)),
        y(static_cast<S*>(a.y.data)),
        rstd(static_cast<float*>(a.rstd.data)),
        rows(a.x.rows),
        n(a.x.cols),
        eps(static_cast<float>(a.eps)) {}
};

// One sweep per row: the row stays in L1 between its two loops, so memory sees
// x once.
template <class S>
void forward_fused(const RmsNormForward& args) {
  const ForwardView<S> v(args);
  detail::for_each_row(v.rows, detail::row_grain(v.n), [&v](std::int64_t r) {
    const float rs = row_rstd(v.x + r * v.n, v.n, v.eps);
    normalize_row(v.x + r * v.n, v.w, v.y + r * v.n, v.n, rs);
    v.rstd[r] = rs;
  });
}

// Two whole-tensor passes, as x.pow(2).mean(-1), rsqrt and the elementwise
// products of a framework.
template <class S>
void forward_reference(const RmsNormForward& args) {
  const ForwardView<S> v(args);
  const std::int64_t grain = detail::row_grain(v.n);
  detail::for_each_row(v.rows, grain,
                       [&v](std::int64_t r) { v.rstd[r] = row_rstd(v.x + r * v.n, v.n, v.eps); });
  detail::for_each_row(v.rows, grain, [&v](std::int64_t r) {
    normalize_row(v.x + r * v.n, v.w, v.y + r * v.n, v.n, v.rstd[r]);
  });
}

template <class S>
struct BackwardView {
  const S* dy;
  const S* x;
  const S* w;
  const float* rstd;
  S* dx;
  S* dw;
  std::int64_t rows;
  std::int64_t n;

  explicit BackwardView(const RmsNormBackward& a)
      : dy(static_cast<const S*>(a.dy.data)),
        x(static_cast<const S*>(a.x.data)),
        w(static_cast<const S*>(a.weight.data)),
        rstd(static_cast<const float*>(a.rstd.data)),
        dx(static_cast<S*>(a.dx.data)),
        dw(static_cast<S*>(a.dweight.data)),
        rows(a.x.rows),
        n(a.x.cols) {}
};

// The row's c = mean(dy * w * xhat).
template <class S>
float row_coefficient(const BackwardView<S>& v, std::int64_t r) {
  const S* xr = v.x + r * v.n;
  const S* dyr = v.dy + r * v.n;
  const float rs = v.rstd[r];
  const float sum = lane_sum(v.n, [xr, dyr, w = v.w, rs](std::int64_t i) {
    return load(dyr, i) * load(w, i) * (load(xr, i) * rs);
  });
  return sum / static_cast<float>(v.n);
}

template <class S>
void dx_row(const S* __restrict xr, const S* __restrict dyr, const S* __restrict w,
            S* __restrict dxr, std::int64_t n, float rs, float c) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float xhat = load(xr, i) * rs;
    store(dxr, i, (load(dyr, i) * load(w, i) - xhat * c) * rs);
  }
}

// One pass over x and dy: dx and the row block's dweight partials from the same
// loads, then the partials reduced in block order.
template <class S>
void backward_fused(const RmsNormBackward& args, float* partials) {
  const BackwardView<S> v(args);
  const std::int64_t n = v.n;
  const auto rows_of_block = [&v, n](std::int64_t begin, std::int64_t end, float* pdw) {
    for (std::int64_t r = begin; r < end; ++r) {
      const float rs = v.rstd[r];
      const float c = row_coefficient(v, r);
      const S* __restrict xr = v.x + r * n;
      const S* __restrict dyr = v.dy + r * n;
      S* __restrict dxr = v.dx + r * n;
      for (std::int64_t i = 0; i < n; ++i) {
        const float g = load(dyr, i);
        const float xhat = load(xr, i) * rs;
        store(dxr, i, (g * load(v.w, i) - xhat * c) * rs);
        pdw[i] += g * xhat;
      }
    }
  };
  detail::block_partials(v.rows, n, partials, std::array<S*, 1>{v.dw}, rows_of_block);
}

// dx per row, then a separate column reduction that rereads x and dy, as
// autograd's composite RMSNorm backward does.
template <class S>
void backward_reference(const RmsNormBackward& args) {
  const BackwardView<S> v(args);
  const std::int64_t n = v.n;
  detail::for_each_row(v.rows, detail::row_grain(n), [&v, n](std::int64_t r) {
    dx_row(v.x + r * n, v.dy + r * n, v.w, v.dx + r * n, n, v.rstd[r], row_coefficient(v, r));
  });
  detail::column_sums(
      v.rows, n, std::array<S*, 1>{v.dw},
      [&v, n](std::int64_t r, std::int64_t begin, std::int64_t width, detail::StripSums<1>& sums) {
        const S* xr = v.x + r * n + begin;
        const S* dyr = v.dy + r * n + begin;
        const float rs = v.rstd[r];
        for (std::int64_t j = 0; j < width; ++j) {
          sums[0][j] += load(dyr, j) * (load(xr, j) * rs);
        }
      });
}

}  // namespace

std::size_t rms_norm_backward_cpu_workspace_bytes(Provider provider, std::int64_t rows,
                                                  std::int64_t hidden) {
  if (provider == Provider::Reference) return 0;
  return detail::block_partials_bytes(rows, hidden, 1);
}

core::Status rms_norm_forward_cpu(Provider provider, const RmsNormForward& args) {
  KW_TRY(validate(args));
  detail::with_storage(args.x.type, [&]<class S>() {
    provider == Provider::Fused ? forward_fused<S>(args) : forward_reference<S>(args);
  });
  return {};
}

core::Status rms_norm_backward_cpu(Provider provider, const RmsNormBackward& args,
                                   std::span<std::byte> workspace) {
  KW_TRY(validate(args));
  KW_TRY(detail::expect_workspace(
      "rms_norm backward", workspace.size(),
      rms_norm_backward_cpu_workspace_bytes(provider, args.x.rows, args.x.cols)));
  auto* partials = reinterpret_cast<float*>(workspace.data());
  detail::with_storage(args.x.type, [&]<class S>() {
    provider == Provider::Fused ? backward_fused<S>(args, partials) : backward_reference<S>(args);
  });
  return {};
}

}  // namespace kernelwatch::kernels
