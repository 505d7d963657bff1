// RMSNorm on the CPU: argument checks and both providers. Fused: one sweep per
// row forward; one pass over x and dy backward (dx plus per-block dweight
// partials, then a fixed-order column reduction). Reference: separate
// whole-tensor passes, as a framework's composite ops run.
#include <cmath>
#include <cstring>
#include <tuple>

#include "kernels/detail/cpu_math.hpp"
#include "kernels/detail/cpu_parallel.hpp"
#include "kernels/detail/validate.hpp"
#include "kernels/rms_norm/rms_norm.hpp"

namespace kernelwatch::kernels {

using core::ErrorCode;
using detail::Bf16Bits;
using detail::lane_sum;
using detail::load;
using detail::store;

core::Status validate_rms_norm_shape(std::int64_t rows, std::int64_t hidden, DType dtype,
                                     double eps) {
  const ElementType type = KW_TRY_WITH(element_type(dtype), "rms_norm");
  KW_TRY(validate_extent("rms_norm: x", rows, hidden, type));
  if (hidden > kMaxRmsNormHidden) {
    return core::fail(ErrorCode::InvalidArgument, "rms_norm: hidden " + std::to_string(hidden) +
                                                      " exceeds the maximum " +
                                                      std::to_string(kMaxRmsNormHidden));
  }
  if (!(eps > 0.0) || !std::isfinite(eps)) {
    return core::fail(ErrorCode::InvalidArgument,
                      "rms_norm: eps must be positive and finite, got " + std::to_string(eps));
  }
  return {};
}

namespace {

core::Status validate_x(const char* what, const TensorRef& x) {
  KW_TRY(detail::expect_float_matrix(what, x));
  if (x.cols > kMaxRmsNormHidden) {
    return core::fail(ErrorCode::InvalidArgument,
                      std::string(what) + ": hidden " + std::to_string(x.cols) +
                          " exceeds the maximum " + std::to_string(kMaxRmsNormHidden));
  }
  return {};
}

}  // namespace

core::Status validate(const RmsNormForward& a) {
  KW_TRY(validate_x("rms_norm forward: x", a.x));
  const auto t = a.x.type;
  const auto m = a.x.rows;
  const auto n = a.x.cols;
  for (const auto& [what, tensor, type, rows, cols] :
       {std::tuple{"rms_norm forward: weight", &a.weight, t, std::int64_t{1}, n},
        std::tuple{"rms_norm forward: y", &a.y, t, m, n},
        std::tuple{"rms_norm forward: rstd", &a.rstd, ElementType::Fp32, m, std::int64_t{1}}}) {
    KW_TRY(detail::expect_tensor(what, *tensor, type, rows, cols));
  }
  if (!(a.eps > 0.0) || !std::isfinite(a.eps)) {
    return core::fail(
        ErrorCode::InvalidArgument,
        "rms_norm forward: eps must be positive and finite, got " + std::to_string(a.eps));
  }
  return {};
}

core::Status validate(const RmsNormBackward& a) {
  KW_TRY(validate_x("rms_norm backward: x", a.x));
  const auto t = a.x.type;
  const auto m = a.x.rows;
  const auto n = a.x.cols;
  for (const auto& [what, tensor, type, rows, cols] :
       {std::tuple{"rms_norm backward: dy", &a.dy, t, m, n},
        std::tuple{"rms_norm backward: weight", &a.weight, t, std::int64_t{1}, n},
        std::tuple{"rms_norm backward: rstd", &a.rstd, ElementType::Fp32, m, std::int64_t{1}},
        std::tuple{"rms_norm backward: dx", &a.dx, t, m, n},
        std::tuple{"rms_norm backward: dweight", &a.dweight, t, std::int64_t{1}, n}}) {
    KW_TRY(detail::expect_tensor(what, *tensor, type, rows, cols));
  }
  return {};
}

namespace {

// Rows per parallel task: about 64 KiB of x.
std::int64_t row_grain(std::int64_t hidden) {
  return std::max<std::int64_t>(1, 16384 / hidden);
}

// The fused backward's row blocks: a function of the shape only, so the dweight
// partials and their reduction order never depend on the thread count.
constexpr std::int64_t kBackwardBlocks = 64;
std::int64_t backward_blocks(std::int64_t rows) {
  return std::min(rows, kBackwardBlocks);
}

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

// One sweep per row: the row stays in L1 between its two loops, so memory sees
// x once.
template <class S>
void forward_fused(const RmsNormForward& a) {
  const auto* x = static_cast<const S*>(a.x.data);
  const auto* w = static_cast<const S*>(a.weight.data);
  auto* y = static_cast<S*>(a.y.data);
  auto* rstd = static_cast<float*>(a.rstd.data);
  const std::int64_t n = a.x.cols;
  const auto eps = static_cast<float>(a.eps);
  detail::parallel_blocks(a.x.rows, row_grain(n), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const float rs = row_rstd(x + r * n, n, eps);
      normalize_row(x + r * n, w, y + r * n, n, rs);
      rstd[r] = rs;
    }
  });
}

// Two whole-tensor passes, as x.pow(2).mean(-1), rsqrt and the elementwise
// products of a framework.
template <class S>
void forward_reference(const RmsNormForward& a) {
  const auto* x = static_cast<const S*>(a.x.data);
  const auto* w = static_cast<const S*>(a.weight.data);
  auto* y = static_cast<S*>(a.y.data);
  auto* rstd = static_cast<float*>(a.rstd.data);
  const std::int64_t n = a.x.cols;
  const auto eps = static_cast<float>(a.eps);
  const std::int64_t grain = row_grain(n);
  detail::parallel_blocks(a.x.rows, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) rstd[r] = row_rstd(x + r * n, n, eps);
  });
  detail::parallel_blocks(a.x.rows, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) normalize_row(x + r * n, w, y + r * n, n, rstd[r]);
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

template <class S>
void backward_fused(const RmsNormBackward& args, float* partials) {
  const BackwardView<S> v(args);
  const std::int64_t n = v.n;
  const std::int64_t blocks = backward_blocks(v.rows);
  const std::int64_t rows_per_block = (v.rows + blocks - 1) / blocks;
  // One pass over x and dy: dx and this block's dweight partials from the same
  // loads.
  detail::parallel_for(blocks, [&](std::int64_t block) {
    float* pdw = partials + block * n;
    std::memset(pdw, 0, sizeof(float) * static_cast<std::size_t>(n));
    const std::int64_t end = std::min(v.rows, (block + 1) * rows_per_block);
    for (std::int64_t r = block * rows_per_block; r < end; ++r) {
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
  });
  // Deterministic reduction of the partials: block order is fixed for every
  // column.
  constexpr std::int64_t kColumns = 1024;
  const std::int64_t used_blocks = (v.rows + rows_per_block - 1) / rows_per_block;
  detail::parallel_blocks(n, kColumns, [&](std::int64_t begin, std::int64_t end) {
    float dw[kColumns] = {};
    const std::int64_t width = end - begin;
    for (std::int64_t block = 0; block < used_blocks; ++block) {
      const float* pdw = partials + block * n + begin;
      for (std::int64_t j = 0; j < width; ++j) dw[j] += pdw[j];
    }
    for (std::int64_t j = 0; j < width; ++j) store(v.dw, begin + j, dw[j]);
  });
}

// dx per row, then a separate column reduction that rereads x and dy, as
// autograd's composite RMSNorm backward does.
template <class S>
void backward_reference(const RmsNormBackward& args) {
  const BackwardView<S> v(args);
  const std::int64_t n = v.n;
  detail::parallel_blocks(v.rows, row_grain(n), [&v, n](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      dx_row(v.x + r * n, v.dy + r * n, v.w, v.dx + r * n, n, v.rstd[r], row_coefficient(v, r));
    }
  });
  constexpr std::int64_t kColumns = 256;
  detail::parallel_blocks(n, kColumns, [&v, n](std::int64_t begin, std::int64_t end) {
    float dw[kColumns] = {};
    const std::int64_t width = end - begin;
    for (std::int64_t r = 0; r < v.rows; ++r) {
      const S* xr = v.x + r * n + begin;
      const S* dyr = v.dy + r * n + begin;
      const float rs = v.rstd[r];
      for (std::int64_t j = 0; j < width; ++j) dw[j] += load(dyr, j) * (load(xr, j) * rs);
    }
    for (std::int64_t j = 0; j < width; ++j) store(v.dw, begin + j, dw[j]);
  });
}

}  // namespace

std::size_t rms_norm_backward_cpu_workspace_bytes(Provider provider, std::int64_t rows,
                                                  std::int64_t hidden) {
  if (provider == Provider::Reference || rows <= 0 || hidden <= 0) return 0;
  return sizeof(float) * static_cast<std::size_t>(backward_blocks(rows)) *
         static_cast<std::size_t>(hidden);
}

core::Status rms_norm_forward_cpu(Provider provider, const RmsNormForward& args) {
  KW_TRY(validate(args));
  const bool fp32 = args.x.type == ElementType::Fp32;
  if (provider == Provider::Fused) {
    fp32 ? forward_fused<float>(args) : forward_fused<Bf16Bits>(args);
  } else {
    fp32 ? forward_reference<float>(args) : forward_reference<Bf16Bits>(args);
  }
  return {};
}

core::Status rms_norm_backward_cpu(Provider provider, const RmsNormBackward& args,
                                   std::span<std::byte> workspace) {
  KW_TRY(validate(args));
  const std::size_t needed =
      rms_norm_backward_cpu_workspace_bytes(provider, args.x.rows, args.x.cols);
  if (workspace.size() < needed) {
    return core::fail(ErrorCode::InvalidArgument, "rms_norm backward: workspace of " +
                                                      std::to_string(workspace.size()) +
                                                      " bytes, need " + std::to_string(needed));
  }
  const bool fp32 = args.x.type == ElementType::Fp32;
  if (provider == Provider::Fused) {
    auto* partials = reinterpret_cast<float*>(workspace.data());
    fp32 ? backward_fused<float>(args, partials) : backward_fused<Bf16Bits>(args, partials);
  } else {
    fp32 ? backward_reference<float>(args) : backward_reference<Bf16Bits>(args);
  }
  return {};
}

}  // namespace kernelwatch::kernels
