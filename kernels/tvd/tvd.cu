// TVD on CUDA, both providers. Fused: a label count, then one pass over p and q that writes the
// gradient (and the elementwise loss) and per-block |p - q| partials, then a one-block reduction
// in a fixed order. Reference: diff, abs, row sums, masked total and sign as separate kernels.
#include <algorithm>

#include "kernels/detail/cuda_check.hpp"
#include "kernels/detail/cuda_common.cuh"
#include "kernels/detail/cuda_kernels.hpp"
#include "kernels/tvd/tvd.hpp"

namespace kernelwatch::kernels::detail {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kColumnsPerThread = 4;
constexpr std::int64_t kTile = kThreads * kColumnsPerThread;  // columns per fused block
constexpr std::int64_t kFusedBlocks = 4096;                   // target grid size
constexpr std::size_t kAlign = 256;

std::size_t aligned(std::size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// The fused forward's grid: x tiles the vocab, y strides over rows. A function of the shape
// only, so the partials and their order are too.
dim3 fused_grid(std::int64_t tokens, std::int64_t vocab) {
  const std::int64_t x = ceil_div(vocab, kTile);
  const std::int64_t y = std::min<std::int64_t>(
      tokens, std::min<std::int64_t>(65535, std::max<std::int64_t>(1, kFusedBlocks / x)));
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

__device__ __forceinline__ float scale_of(int reduction, long long kept, std::int64_t vocab) {
  // Same formula and precision as tvd_scale() on the host.
  switch (static_cast<Reduction>(reduction)) {
    case Reduction::BatchMean:
      return kept > 0 ? static_cast<float>(1.0 / static_cast<double>(kept)) : 0.0f;
    case Reduction::Mean:
      return kept > 0 ? static_cast<float>(1.0 /
                                           (static_cast<double>(kept) * static_cast<double>(vocab)))
                      : 0.0f;
    default:
      return 1.0f;
  }
}

__device__ __forceinline__ float half_sign(float d, float half) {
  return d > 0.0f ? half : (d < 0.0f ? -half : 0.0f);
}

__device__ __forceinline__ bool ignored(const std::int64_t* labels, std::int64_t row,
                                        std::int64_t ignore_index) {
  return labels != nullptr && labels[row] == ignore_index;
}

// One block: the number of rows whose label is not ignore_index (every row without labels).
__global__ void __launch_bounds__(1024)
    tvd_count_kept(const std::int64_t* __restrict__ labels, std::int64_t tokens,
                   std::int64_t ignore_index, long long* __restrict__ kept) {
  __shared__ long long scratch[33];
  long long count = 0;
  for (std::int64_t r = threadIdx.x; r < tokens; r += blockDim.x) {
    count += ignored(labels, r, ignore_index) ? 0 : 1;
  }
  count = block_sum(count, scratch);
  if (threadIdx.x == 0) *kept = count;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    tvd_forward_fused(const T* __restrict__ p, const T* __restrict__ q,
                      const std::int64_t* __restrict__ labels, std::int64_t ignore_index,
                      const long long* __restrict__ kept, T* __restrict__ grad,
                      float* __restrict__ loss, float* __restrict__ partials, std::int64_t tokens,
                      std::int64_t vocab, int reduction) {
  __shared__ float scratch[33];
  const bool none = static_cast<Reduction>(reduction) == Reduction::None;
  const float half = 0.5f * scale_of(reduction, *kept, vocab);
  const std::int64_t column0 = static_cast<std::int64_t>(blockIdx.x) * kTile + threadIdx.x;
  float sum = 0.0f;
  for (std::int64_t row = blockIdx.y; row < tokens; row += gridDim.y) {
    const bool skip = ignored(labels, row, ignore_index);
#pragma unroll
    for (int k = 0; k < kColumnsPerThread; ++k) {
      const std::int64_t column = column0 + k * kThreads;
      if (column >= vocab) break;
      const std::int64_t i = row * vocab + column;
      if (skip) {
        st(grad, i, 0.0f);
        if (none) loss[i] = 0.0f;
        continue;
      }
      const float d = ld(p, i) - ld(q, i);
      st(grad, i, half_sign(d, half));
      if (none) {
        loss[i] = 0.5f * fabsf(d);
      } else {
        sum += fabsf(d);
      }
    }
  }
  if (none) return;
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = sum;
}

// One block: loss = 0.5 * scale * sum(values[i] * mask_i) in an order fixed by the count.
// With labels == nullptr every value counts (the fused partials).
__global__ void __launch_bounds__(1024)
    tvd_finalize(const float* __restrict__ values, std::int64_t count,
                 const std::int64_t* __restrict__ labels, std::int64_t ignore_index,
                 const long long* __restrict__ kept, std::int64_t vocab, int reduction,
                 float* __restrict__ loss) {
  __shared__ float scratch[33];
  float sum = 0.0f;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    sum += ignored(labels, i, ignore_index) ? 0.0f : values[i];
  }
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) *loss = 0.5f * sum * scale_of(reduction, *kept, vocab);
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    tvd_reference_diff(const T* __restrict__ p, const T* __restrict__ q, T* __restrict__ diff,
                       std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    st(diff, i, ld(p, i) - ld(q, i));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    tvd_reference_abs(const T* __restrict__ diff, T* __restrict__ absd, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    st(absd, i, fabsf(ld(diff, i)));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    tvd_reference_row_sums(const T* __restrict__ absd, float* __restrict__ row_sums,
                           std::int64_t tokens, std::int64_t vocab) {
  __shared__ float scratch[33];
  for (std::int64_t row = blockIdx.x; row < tokens; row += gridDim.x) {
    float sum = 0.0f;
    for (std::int64_t i = threadIdx.x; i < vocab; i += blockDim.x) sum += ld(absd, row * vocab + i);
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) row_sums[row] = sum;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    tvd_reference_loss_none(const T* __restrict__ absd, const std::int64_t* __restrict__ labels,
                            std::int64_t ignore_index, float* __restrict__ loss, std::int64_t count,
                            std::int64_t vocab) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float mask = ignored(labels, i / vocab, ignore_index) ? 0.0f : 1.0f;
    loss[i] = 0.5f * ld(absd, i) * mask;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    tvd_reference_sign(const T* __restrict__ diff, const std::int64_t* __restrict__ labels,
                       std::int64_t ignore_index, const long long* __restrict__ kept,
                       T* __restrict__ grad, std::int64_t count, std::int64_t vocab,
                       int reduction) {
  const float half = 0.5f * scale_of(reduction, *kept, vocab);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float mask = ignored(labels, i / vocab, ignore_index) ? 0.0f : 1.0f;
    st(grad, i, half_sign(ld(diff, i), half * mask));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    tvd_backward_scale(const T* __restrict__ grad, const float* __restrict__ grad_output,
                       bool scalar, T* __restrict__ dp, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    st(dp, i, ld(grad, i) * grad_output[scalar ? 0 : i]);
  }
}

__global__ void __launch_bounds__(kThreads)
    tvd_reference_expand(const float* __restrict__ grad_output, bool scalar,
                         float* __restrict__ expanded, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    expanded[i] = grad_output[scalar ? 0 : i];
  }
}

// Workspace layout (each part 256-byte aligned): kept count, then the fused partials or the
// reference's diff, absd and row sums.
struct ForwardLayout {
  std::size_t kept = 0;
  std::size_t partials = 0;
  std::size_t diff = 0;
  std::size_t absd = 0;
  std::size_t row_sums = 0;
  std::size_t total = 0;
};

ForwardLayout forward_layout(Provider provider, std::int64_t tokens, std::int64_t vocab,
                             std::size_t element) {
  ForwardLayout layout;
  std::size_t at = aligned(sizeof(long long));
  if (provider == Provider::Fused) {
    const dim3 grid = fused_grid(tokens, vocab);
    layout.partials = at;
    at += aligned(sizeof(float) * grid.x * grid.y);
  } else {
    const std::size_t tensor = aligned(element * static_cast<std::size_t>(tokens * vocab));
    layout.diff = at;
    layout.absd = at + tensor;
    layout.row_sums = at + 2 * tensor;
    at += 2 * tensor + aligned(sizeof(float) * static_cast<std::size_t>(tokens));
  }
  layout.total = at;
  return layout;
}

template <class T>
core::Status forward(Provider provider, const TvdForward& a, DeviceWorkspace workspace,
                     cudaStream_t stream) {
  const auto* p = static_cast<const T*>(a.p.data);
  const auto* q = static_cast<const T*>(a.q.data);
  const auto* labels = static_cast<const std::int64_t*>(a.labels.data);
  auto* grad = static_cast<T*>(a.grad.data);
  auto* loss = static_cast<float*>(a.loss.data);
  const std::int64_t tokens = a.p.rows;
  const std::int64_t vocab = a.p.cols;
  const std::int64_t count = tokens * vocab;
  const int reduction = static_cast<int>(a.reduction);
  const bool none = a.reduction == Reduction::None;
  auto* base = static_cast<char*>(workspace.data);
  const ForwardLayout layout = forward_layout(provider, tokens, vocab, sizeof(T));
  auto* kept = reinterpret_cast<long long*>(base + layout.kept);

  tvd_count_kept<<<1, 1024, 0, stream>>>(labels, tokens, a.ignore_index, kept);
  KW_CUDA_CHECK_LAUNCH("tvd_count_kept");
  if (provider == Provider::Fused) {
    auto* partials = reinterpret_cast<float*>(base + layout.partials);
    const dim3 grid = fused_grid(tokens, vocab);
    tvd_forward_fused<T><<<grid, kThreads, 0, stream>>>(p, q, labels, a.ignore_index, kept, grad,
                                                        loss, partials, tokens, vocab, reduction);
    KW_CUDA_CHECK_LAUNCH("tvd_forward_fused");
    if (!none) {
      tvd_finalize<<<1, 1024, 0, stream>>>(partials, static_cast<std::int64_t>(grid.x) * grid.y,
                                           nullptr, a.ignore_index, kept, vocab, reduction, loss);
      KW_CUDA_CHECK_LAUNCH("tvd_finalize");
    }
    return {};
  }
  auto* diff = reinterpret_cast<T*>(base + layout.diff);
  auto* absd = reinterpret_cast<T*>(base + layout.absd);
  auto* row_sums = reinterpret_cast<float*>(base + layout.row_sums);
  const unsigned blocks = elementwise_blocks(count, kThreads);
  tvd_reference_diff<T><<<blocks, kThreads, 0, stream>>>(p, q, diff, count);
  KW_CUDA_CHECK_LAUNCH("tvd_reference_diff");
  tvd_reference_abs<T><<<blocks, kThreads, 0, stream>>>(diff, absd, count);
  KW_CUDA_CHECK_LAUNCH("tvd_reference_abs");
  if (none) {
    tvd_reference_loss_none<T>
        <<<blocks, kThreads, 0, stream>>>(absd, labels, a.ignore_index, loss, count, vocab);
    KW_CUDA_CHECK_LAUNCH("tvd_reference_loss_none");
  } else {
    const auto row_grid = static_cast<unsigned>(std::min<std::int64_t>(tokens, 1 << 20));
    tvd_reference_row_sums<T><<<row_grid, kThreads, 0, stream>>>(absd, row_sums, tokens, vocab);
    KW_CUDA_CHECK_LAUNCH("tvd_reference_row_sums");
    tvd_finalize<<<1, 1024, 0, stream>>>(row_sums, tokens, labels, a.ignore_index, kept, vocab,
                                         reduction, loss);
    KW_CUDA_CHECK_LAUNCH("tvd_finalize");
  }
  tvd_reference_sign<T><<<blocks, kThreads, 0, stream>>>(diff, labels, a.ignore_index, kept, grad,
                                                         count, vocab, reduction);
  KW_CUDA_CHECK_LAUNCH("tvd_reference_sign");
  return {};
}

template <class T>
core::Status backward(Provider provider, const TvdBackward& a, DeviceWorkspace workspace,
                      cudaStream_t stream) {
  const auto* grad = static_cast<const T*>(a.grad.data);
  const auto* g = static_cast<const float*>(a.grad_output.data);
  auto* dp = static_cast<T*>(a.dp.data);
  const bool scalar = a.grad_output.elements() == 1;
  const std::int64_t count = a.grad.elements();
  const unsigned blocks = elementwise_blocks(count, kThreads);
  if (provider == Provider::Fused) {
    tvd_backward_scale<T><<<blocks, kThreads, 0, stream>>>(grad, g, scalar, dp, count);
    KW_CUDA_CHECK_LAUNCH("tvd_backward_scale");
    return {};
  }
  auto* expanded = static_cast<float*>(workspace.data);
  tvd_reference_expand<<<blocks, kThreads, 0, stream>>>(g, scalar, expanded, count);
  KW_CUDA_CHECK_LAUNCH("tvd_reference_expand");
  tvd_backward_scale<T><<<blocks, kThreads, 0, stream>>>(grad, expanded, false, dp, count);
  KW_CUDA_CHECK_LAUNCH("tvd_backward_scale");
  return {};
}

}  // namespace
}  // namespace cuda

namespace {

std::size_t tvd_forward_cuda_workspace_bytes(Provider provider, std::int64_t tokens,
                                             std::int64_t vocab, DType dtype) {
  return cuda::forward_layout(provider, tokens, vocab, dtype == DType::Bf16 ? 2 : 4).total;
}

std::size_t tvd_backward_cuda_workspace_bytes(Provider provider, std::int64_t tokens,
                                              std::int64_t vocab) {
  if (provider == Provider::Fused) return 0;
  return sizeof(float) * static_cast<std::size_t>(tokens * vocab);
}

core::Status tvd_forward_cuda(Provider provider, const TvdForward& args, DeviceWorkspace workspace,
                              cudaStream_t stream) {
  if (args.p.type == ElementType::Fp32) {
    return cuda::forward<float>(provider, args, workspace, stream);
  }
  return cuda::forward<cuda::bf16>(provider, args, workspace, stream);
}

core::Status tvd_backward_cuda(Provider provider, const TvdBackward& args,
                               DeviceWorkspace workspace, cudaStream_t stream) {
  if (args.grad.type == ElementType::Fp32) {
    return cuda::backward<float>(provider, args, workspace, stream);
  }
  return cuda::backward<cuda::bf16>(provider, args, workspace, stream);
}

}  // namespace

const BackendOps& tvd_cuda_ops() {
  static const BackendOps ops{
      [](Provider provider, const CaseSpec& s, int) {
        return std::max(tvd_forward_cuda_workspace_bytes(provider, s.rows, s.cols, s.dtype),
                        tvd_backward_cuda_workspace_bytes(provider, s.rows, s.cols));
      },
      [](const PassArgs& a) {
        return tvd_forward_cuda(a.provider, tvd_forward_args(a), workspace_of(a), stream_of(a));
      },
      [](const PassArgs& a) {
        return tvd_backward_cuda(a.provider, tvd_backward_args(a), workspace_of(a), stream_of(a));
      }};
  return ops;
}

}  // namespace kernelwatch::kernels::detail
