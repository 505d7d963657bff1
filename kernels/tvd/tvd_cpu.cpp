// TVD on the CPU: argument checks (shared with the CUDA backend) and both providers.
#include <cmath>
#include <cstring>

#include "kernels/detail/cpu_math.hpp"
#include "kernels/detail/cpu_rows.hpp"
#include "kernels/detail/validate.hpp"
#include "kernels/tvd/tvd.hpp"

namespace kernelwatch::kernels {

using core::ErrorCode;
using detail::load;
using detail::store;

core::Status validate_tvd_shape(std::int64_t tokens, std::int64_t vocab, DType dtype) {
  const ElementType type = KW_TRY_WITH(element_type(dtype), "tvd");
  KW_TRY(validate_extent("tvd: p", tokens, vocab, type));
  // The fp32 tensors (loss and grad_output for reduction none, the reference's expansion).
  return validate_extent("tvd: fp32 loss", tokens, vocab, ElementType::Fp32);
}

core::Status validate(const TvdForward& a) {
  KW_TRY(detail::expect_float_matrix("tvd forward: p", a.p));
  const auto t = a.p.rows;
  const auto v = a.p.cols;
  KW_TRY(detail::expect_tensor("tvd forward: q", a.q, a.p.type, t, v));
  KW_TRY(detail::expect_tensor("tvd forward: grad", a.grad, a.p.type, t, v));
  if (a.labels.present()) {
    KW_TRY(detail::expect_tensor("tvd forward: labels", a.labels, ElementType::Int64, t, 1));
  }
  const bool none = a.reduction == Reduction::None;
  return detail::expect_tensor(none ? "tvd forward: loss (reduction none)" : "tvd forward: loss",
                               a.loss, ElementType::Fp32, none ? t : 1, none ? v : 1);
}

core::Status validate(const TvdBackward& a) {
  KW_TRY(detail::expect_float_matrix("tvd backward: grad", a.grad));
  const auto t = a.grad.rows;
  const auto v = a.grad.cols;
  KW_TRY(detail::expect_tensor("tvd backward: dp", a.dp, a.grad.type, t, v));
  if (!a.grad_output.present()) {
    return core::fail(ErrorCode::InvalidArgument,
                      "tvd backward: grad_output is missing (null data)");
  }
  const bool scalar = a.grad_output.rows == 1 && a.grad_output.cols == 1;
  if (scalar) {
    return detail::expect_tensor("tvd backward: grad_output", a.grad_output, ElementType::Fp32, 1,
                                 1);
  }
  return detail::expect_tensor("tvd backward: grad_output (1 x 1 or the shape of grad)",
                               a.grad_output, ElementType::Fp32, t, v);
}

double tvd_scale(Reduction reduction, std::int64_t kept_rows, std::int64_t vocab) {
  switch (reduction) {
    case Reduction::BatchMean:
      return kept_rows > 0 ? 1.0 / static_cast<double>(kept_rows) : 0.0;
    case Reduction::Mean:
      return kept_rows > 0 ? 1.0 / (static_cast<double>(kept_rows) * static_cast<double>(vocab))
                           : 0.0;
    case Reduction::Sum:
    case Reduction::None:
      return 1.0;
  }
  return 1.0;
}

namespace {

constexpr std::size_t kAlign = 64;
std::size_t aligned(std::size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Rows per task (about 64 Ki elements): fixed by the shape, so are the loss partials.
std::int64_t rows_per_task(std::int64_t vocab) {
  return std::max<std::int64_t>(1, 65536 / vocab);
}
std::int64_t task_count(std::int64_t tokens, std::int64_t vocab) {
  const std::int64_t rows = rows_per_task(vocab);
  return (tokens + rows - 1) / rows;
}
constexpr std::int64_t kElementGrain = 65536;

std::int64_t kept_rows(const TvdForward& a) {
  if (!a.labels.present()) return a.p.rows;
  const auto* labels = static_cast<const std::int64_t*>(a.labels.data);
  std::int64_t kept = 0;
  for (std::int64_t r = 0; r < a.labels.rows; ++r) kept += labels[r] != a.ignore_index ? 1 : 0;
  return kept;
}

bool row_ignored(const TvdForward& a, std::int64_t row) {
  return a.labels.present() &&
         static_cast<const std::int64_t*>(a.labels.data)[row] == a.ignore_index;
}

// half * sign(d), 0 for d == 0, branch-free so that it vectorizes.
inline float half_sign(float d, float half) {
  return (static_cast<float>(d > 0.0f) - static_cast<float>(d < 0.0f)) * half;
}

// One chunk of a row (L1-sized): the gradient, then the sum of |p - q| from the same lines.
template <class S>
float fused_chunk(const S* __restrict pr, const S* __restrict qr, S* __restrict gr, std::int64_t n,
                  float half) {
  for (std::int64_t i = 0; i < n; ++i) store(gr, i, half_sign(load(pr, i) - load(qr, i), half));
  return detail::lane_sum(
      n, [pr, qr](std::int64_t i) { return std::fabs(load(pr, i) - load(qr, i)); });
}

template <class S>
void fused_none_row(const S* __restrict pr, const S* __restrict qr, S* __restrict gr,
                    float* __restrict lr, std::int64_t n, float half) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = load(pr, i) - load(qr, i);
    lr[i] = 0.5f * std::fabs(d);
    store(gr, i, half_sign(d, half));
  }
}

// One pass over p and q writes the gradient (and the elementwise loss) and sums |p - q|.
template <class S>
void forward_fused(const TvdForward& a, float* partials) {
  const auto* p = static_cast<const S*>(a.p.data);
  const auto* q = static_cast<const S*>(a.q.data);
  auto* grad = static_cast<S*>(a.grad.data);
  auto* loss = static_cast<float*>(a.loss.data);
  const std::int64_t tokens = a.p.rows;
  const std::int64_t vocab = a.p.cols;
  const float scale = static_cast<float>(tvd_scale(a.reduction, kept_rows(a), vocab));
  const float half = 0.5f * scale;
  const bool none = a.reduction == Reduction::None;
  const std::int64_t rows = rows_per_task(vocab);
  detail::parallel_for(task_count(tokens, vocab), [&](std::int64_t task) {
    float task_sum = 0.0f;
    const std::int64_t end = std::min(tokens, (task + 1) * rows);
    for (std::int64_t r = task * rows; r < end; ++r) {
      const S* pr = p + r * vocab;
      const S* qr = q + r * vocab;
      S* gr = grad + r * vocab;
      if (row_ignored(a, r)) {
        for (std::int64_t i = 0; i < vocab; ++i) store(gr, i, 0.0f);
        if (none) std::memset(loss + r * vocab, 0, sizeof(float) * static_cast<std::size_t>(vocab));
        continue;
      }
      if (none) {
        fused_none_row(pr, qr, gr, loss + r * vocab, vocab, half);
        continue;
      }
      float row_sum = 0.0f;
      for (std::int64_t chunk = 0; chunk < vocab; chunk += detail::kSumChunk) {
        const std::int64_t width = std::min(detail::kSumChunk, vocab - chunk);
        row_sum += fused_chunk(pr + chunk, qr + chunk, gr + chunk, width, half);
      }
      task_sum += row_sum;
    }
    partials[task] = task_sum;
  });
  if (!none) {
    float total = 0.0f;
    for (std::int64_t task = 0; task < task_count(tokens, vocab); ++task) total += partials[task];
    loss[0] = 0.5f * total * scale;
  }
}

// diff = p - q; absd = |diff|; row sums; masked total; grad = 0.5 * sign(diff) * scale * mask:
// each a separate pass over whole tensors, intermediates in the input dtype.
template <class S>
void forward_reference(const TvdForward& a, std::byte* workspace) {
  const auto* p = static_cast<const S*>(a.p.data);
  const auto* q = static_cast<const S*>(a.q.data);
  auto* grad = static_cast<S*>(a.grad.data);
  auto* loss = static_cast<float*>(a.loss.data);
  const std::int64_t tokens = a.p.rows;
  const std::int64_t vocab = a.p.cols;
  const std::int64_t count = tokens * vocab;
  const std::size_t tensor_bytes = aligned(sizeof(S) * static_cast<std::size_t>(count));
  auto* diff = reinterpret_cast<S*>(workspace);
  auto* absd = reinterpret_cast<S*>(workspace + tensor_bytes);
  auto* row_sums = reinterpret_cast<float*>(workspace + 2 * tensor_bytes);

  detail::parallel_blocks(count, kElementGrain, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) store(diff, i, load(p, i) - load(q, i));
  });
  detail::parallel_blocks(count, kElementGrain, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) store(absd, i, std::fabs(load(diff, i)));
  });
  const auto mask = [&a](std::int64_t r) { return row_ignored(a, r) ? 0.0f : 1.0f; };
  const float scale = static_cast<float>(tvd_scale(a.reduction, kept_rows(a), vocab));
  if (a.reduction == Reduction::None) {
    detail::for_each_row(tokens, rows_per_task(vocab), [&](std::int64_t r) {
      const float m = 0.5f * mask(r);
      for (std::int64_t i = r * vocab; i < (r + 1) * vocab; ++i) loss[i] = load(absd, i) * m;
    });
  } else {
    detail::for_each_row(tokens, rows_per_task(vocab), [&](std::int64_t r) {
      const S* row = absd + r * vocab;
      row_sums[r] = detail::lane_sum(vocab, [row](std::int64_t i) { return load(row, i); });
    });
    float total = 0.0f;
    for (std::int64_t r = 0; r < tokens; ++r) total += row_sums[r] * mask(r);
    loss[0] = 0.5f * total * scale;
  }
  detail::for_each_row(tokens, rows_per_task(vocab), [&](std::int64_t r) {
    const float half = 0.5f * scale * mask(r);
    for (std::int64_t i = r * vocab; i < (r + 1) * vocab; ++i) {
      store(grad, i, half_sign(load(diff, i), half));
    }
  });
}

template <class S>
void backward(Provider provider, const TvdBackward& a, std::byte* workspace) {
  const auto* grad = static_cast<const S*>(a.grad.data);
  auto* dp = static_cast<S*>(a.dp.data);
  const auto* g = static_cast<const float*>(a.grad_output.data);
  const bool scalar = a.grad_output.elements() == 1;
  const std::int64_t count = a.grad.elements();
  if (provider == Provider::Fused) {
    detail::parallel_blocks(count, kElementGrain, [=](std::int64_t begin, std::int64_t end) {
      if (scalar) {
        const float s = g[0];
        for (std::int64_t i = begin; i < end; ++i) store(dp, i, load(grad, i) * s);
      } else {
        for (std::int64_t i = begin; i < end; ++i) store(dp, i, load(grad, i) * g[i]);
      }
    });
    return;
  }
  // grad_output.expand_as(grad) materialized, then an elementwise product.
  auto* expanded = reinterpret_cast<float*>(workspace);
  detail::parallel_blocks(count, kElementGrain, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) expanded[i] = scalar ? g[0] : g[i];
  });
  detail::parallel_blocks(count, kElementGrain, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) store(dp, i, load(grad, i) * expanded[i]);
  });
}

}  // namespace

std::size_t tvd_forward_cpu_workspace_bytes(Provider provider, std::int64_t tokens,
                                            std::int64_t vocab, DType dtype) {
  if (tokens <= 0 || vocab <= 0) return 0;
  if (provider == Provider::Fused) {
    return sizeof(float) * static_cast<std::size_t>(task_count(tokens, vocab));
  }
  const std::size_t size = dtype == DType::Bf16 ? 2 : 4;
  return 2 * aligned(size * static_cast<std::size_t>(tokens * vocab)) +
         sizeof(float) * static_cast<std::size_t>(tokens);
}

std::size_t tvd_backward_cpu_workspace_bytes(Provider provider, std::int64_t tokens,
                                             std::int64_t vocab) {
  if (provider == Provider::Fused || tokens <= 0 || vocab <= 0) return 0;
  return sizeof(float) * static_cast<std::size_t>(tokens * vocab);
}

core::Status tvd_forward_cpu(Provider provider, const TvdForward& args,
                             std::span<std::byte> workspace) {
  KW_TRY(validate(args));
  const DType dtype = args.p.type == ElementType::Fp32 ? DType::Fp32 : DType::Bf16;
  KW_TRY(detail::expect_workspace(
      "tvd forward", workspace.size(),
      tvd_forward_cpu_workspace_bytes(provider, args.p.rows, args.p.cols, dtype)));
  detail::with_storage(args.p.type, [&]<class S>() {
    if (provider == Provider::Fused) {
      forward_fused<S>(args, reinterpret_cast<float*>(workspace.data()));
    } else {
      forward_reference<S>(args, workspace.data());
    }
  });
  return {};
}

core::Status tvd_backward_cpu(Provider provider, const TvdBackward& args,
                              std::span<std::byte> workspace) {
  KW_TRY(validate(args));
  KW_TRY(detail::expect_workspace(
      "tvd backward", workspace.size(),
      tvd_backward_cpu_workspace_bytes(provider, args.grad.rows, args.grad.cols)));
  detail::with_storage(args.grad.type,
                       [&]<class S>() { backward<S>(provider, args, workspace.data()); });
  return {};
}

}  // namespace kernelwatch::kernels
