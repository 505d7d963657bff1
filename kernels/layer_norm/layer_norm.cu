// LayerNorm on CUDA, both providers. Fused: one block per row with the row in registers
// (hidden <= 8192) or re-read from L1/L2 (larger rows); the backward writes per-block dw/db
// partials that a second kernel reduces in a fixed order. Reference: separate mean, rstd,
// normalize, dx and column-reduction kernels.
#include <algorithm>

#include "kernels/detail/cuda_check.hpp"
#include "kernels/detail/cuda_common.cuh"
#include "kernels/detail/cuda_kernels.hpp"
#include "kernels/layer_norm/layer_norm.hpp"

namespace kernelwatch::kernels::detail {
namespace cuda {
namespace {

constexpr int kMaxRegisterVpt = 8;  // register-resident rows up to 8 * 1024 elements
// The backward keeps four values per element in registers: 8 per thread at 1024 threads
// exceeds the 64 registers a thread may have there (ptxas spills; 16 at 512 threads too), so
// rows over 4096 take the long-row kernel.
constexpr int kMaxBackwardRegisterVpt = 4;
constexpr unsigned kMaxRowBlocks = 1u << 20;

unsigned row_blocks(std::int64_t rows) {
  return static_cast<unsigned>(std::min<std::int64_t>(rows, kMaxRowBlocks));
}

// ---- fused forward -------------------------------------------------------------------------

template <class T, int kVpt>
__global__ void __launch_bounds__(1024)
    ln_forward_fused_registers(const T* __restrict__ x, const T* __restrict__ w,
                               const T* __restrict__ b, T* __restrict__ y, float* __restrict__ mean,
                               float* __restrict__ rstd, std::int64_t rows, std::int64_t n,
                               float eps) {
  __shared__ float scratch[33];
  const float inv_n = 1.0f / static_cast<float>(n);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    float v[kVpt];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kVpt; ++k) {
      const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
      v[k] = i < n ? ld(xr, i) : 0.0f;
      sum += v[k];
    }
    const float mu = block_sum(sum, scratch) * inv_n;
    float squares = 0.0f;
#pragma unroll
    for (int k = 0; k < kVpt; ++k) {
      const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
      const float d = v[k] - mu;
      squares += i < n ? d * d : 0.0f;
    }
    const float rs = 1.0f / sqrtf(block_sum(squares, scratch) * inv_n + eps);
    T* yr = y + row * n;
#pragma unroll
    for (int k = 0; k < kVpt; ++k) {
      const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
      if (i < n) st(yr, i, (v[k] - mu) * rs * ld(w, i) + ld(b, i));
    }
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// Rows too long for registers: the block re-reads its row, which L1/L2 still hold.
template <class T>
__global__ void __launch_bounds__(1024)
    ln_forward_fused_long(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                          T* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd,
                          std::int64_t rows, std::int64_t n, float eps) {
  __shared__ float scratch[33];
  const float inv_n = 1.0f / static_cast<float>(n);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    float sum = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += ld(xr, i);
    const float mu = block_sum(sum, scratch) * inv_n;
    float squares = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float d = ld(xr, i) - mu;
      squares += d * d;
    }
    const float rs = 1.0f / sqrtf(block_sum(squares, scratch) * inv_n + eps);
    T* yr = y + row * n;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      st(yr, i, (ld(xr, i) - mu) * rs * ld(w, i) + ld(b, i));
    }
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// ---- fused backward ------------------------------------------------------------------------

// Block `blockIdx.x` owns rows [begin, end) and writes its dw/db partials to
// partials[(2 * block) * n ...] and partials[(2 * block + 1) * n ...].
template <class T, int kVpt, int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads)
    ln_backward_fused_registers(const T* __restrict__ dy, const T* __restrict__ x,
                                const T* __restrict__ w, const float* __restrict__ mean,
                                const float* __restrict__ rstd, T* __restrict__ dx,
                                float* __restrict__ partials, std::int64_t rows, std::int64_t n,
                                std::int64_t rows_per_block) {
  __shared__ float scratch[66];
  const float inv_n = 1.0f / static_cast<float>(n);
  float dw[kVpt];
  float db[kVpt];
#pragma unroll
  for (int k = 0; k < kVpt; ++k) dw[k] = db[k] = 0.0f;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * rows_per_block;
  const std::int64_t end = begin + rows_per_block < rows ? begin + rows_per_block : rows;
  for (std::int64_t row = begin; row < end; ++row) {
    const T* xr = x + row * n;
    const T* dyr = dy + row * n;
    const float mu = mean[row];
    const float rs = rstd[row];
    float xhat[kVpt];
    float g[kVpt];
    float c1 = 0.0f;
    float c2 = 0.0f;
#pragma unroll
    for (int k = 0; k < kVpt; ++k) {
      const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
      xhat[k] = i < n ? (ld(xr, i) - mu) * rs : 0.0f;
      g[k] = i < n ? ld(dyr, i) : 0.0f;
      const float wdy = i < n ? ld(w, i) * g[k] : 0.0f;
      c1 += xhat[k] * wdy;
      c2 += wdy;
    }
    block_sum2(c1, c2, scratch);
    c1 *= inv_n;
    c2 *= inv_n;
    T* dxr = dx + row * n;
#pragma unroll
    for (int k = 0; k < kVpt; ++k) {
      const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
      if (i < n) {
        st(dxr, i, (ld(w, i) * g[k] - (xhat[k] * c1 + c2)) * rs);
        dw[k] += g[k] * xhat[k];
        db[k] += g[k];
      }
    }
  }
  float* pdw = partials + 2 * static_cast<std::int64_t>(blockIdx.x) * n;
  float* pdb = pdw + n;
#pragma unroll
  for (int k = 0; k < kVpt; ++k) {
    const std::int64_t i = threadIdx.x + static_cast<std::int64_t>(k) * blockDim.x;
    if (i < n) {
      pdw[i] = dw[k];
      pdb[i] = db[k];
    }
  }
}

// Long rows: the partials live in the block's own slice of global memory (L2-resident); each
// thread only ever touches its own columns, so no synchronization is needed for them.
template <class T>
__global__ void __launch_bounds__(1024)
    ln_backward_fused_long(const T* __restrict__ dy, const T* __restrict__ x,
                           const T* __restrict__ w, const float* __restrict__ mean,
                           const float* __restrict__ rstd, T* __restrict__ dx,
                           float* __restrict__ partials, std::int64_t rows, std::int64_t n,
                           std::int64_t rows_per_block) {
  __shared__ float scratch[66];
  const float inv_n = 1.0f / static_cast<float>(n);
  float* pdw = partials + 2 * static_cast<std::int64_t>(blockIdx.x) * n;
  float* pdb = pdw + n;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) pdw[i] = pdb[i] = 0.0f;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * rows_per_block;
  const std::int64_t end = begin + rows_per_block < rows ? begin + rows_per_block : rows;
  for (std::int64_t row = begin; row < end; ++row) {
    const T* xr = x + row * n;
    const T* dyr = dy + row * n;
    const float mu = mean[row];
    const float rs = rstd[row];
    float c1 = 0.0f;
    float c2 = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float wdy = ld(w, i) * ld(dyr, i);
      c1 += (ld(xr, i) - mu) * rs * wdy;
      c2 += wdy;
    }
    block_sum2(c1, c2, scratch);
    c1 *= inv_n;
    c2 *= inv_n;
    T* dxr = dx + row * n;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float g = ld(dyr, i);
      const float xhat = (ld(xr, i) - mu) * rs;
      st(dxr, i, (ld(w, i) * g - (xhat * c1 + c2)) * rs);
      pdw[i] += g * xhat;
      pdb[i] += g;
    }
  }
}

// Column j sums the partials of blocks 0, 1, 2, ... in that order: deterministic.
template <class T>
__global__ void __launch_bounds__(256)
    ln_backward_reduce_partials(const float* __restrict__ partials, std::int64_t blocks,
                                std::int64_t n, T* __restrict__ dw, T* __restrict__ db) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float a = 0.0f;
    float c = 0.0f;
    for (std::int64_t block = 0; block < blocks; ++block) {
      a += partials[2 * block * n + j];
      c += partials[(2 * block + 1) * n + j];
    }
    st(dw, j, a);
    st(db, j, c);
  }
}

// ---- reference -----------------------------------------------------------------------------

constexpr int kReferenceThreads = 256;

template <class T>
__global__ void __launch_bounds__(kReferenceThreads)
    ln_reference_mean(const T* __restrict__ x, float* __restrict__ mean, std::int64_t rows,
                      std::int64_t n) {
  __shared__ float scratch[33];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    float sum = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += ld(xr, i);
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) mean[row] = sum / static_cast<float>(n);
  }
}

template <class T>
__global__ void __launch_bounds__(kReferenceThreads)
    ln_reference_rstd(const T* __restrict__ x, const float* __restrict__ mean,
                      float* __restrict__ rstd, std::int64_t rows, std::int64_t n, float eps) {
  __shared__ float scratch[33];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    const float mu = mean[row];
    float squares = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float d = ld(xr, i) - mu;
      squares += d * d;
    }
    squares = block_sum(squares, scratch);
    if (threadIdx.x == 0) rstd[row] = 1.0f / sqrtf(squares / static_cast<float>(n) + eps);
  }
}

template <class T>
__global__ void __launch_bounds__(kReferenceThreads)
    ln_reference_normalize(const T* __restrict__ x, const float* __restrict__ mean,
                           const float* __restrict__ rstd, const T* __restrict__ w,
                           const T* __restrict__ b, T* __restrict__ y, std::int64_t count,
                           std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / n;
    const std::int64_t col = i - row * n;
    st(y, i, (ld(x, i) - mean[row]) * rstd[row] * ld(w, col) + ld(b, col));
  }
}

template <class T>
__global__ void __launch_bounds__(kReferenceThreads)
    ln_reference_dx(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ w,
                    const float* __restrict__ mean, const float* __restrict__ rstd,
                    T* __restrict__ dx, std::int64_t rows, std::int64_t n) {
  __shared__ float scratch[66];
  const float inv_n = 1.0f / static_cast<float>(n);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    const T* dyr = dy + row * n;
    const float mu = mean[row];
    const float rs = rstd[row];
    float c1 = 0.0f;
    float c2 = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float wdy = ld(w, i) * ld(dyr, i);
      c1 += (ld(xr, i) - mu) * rs * wdy;
      c2 += wdy;
    }
    block_sum2(c1, c2, scratch);
    c1 *= inv_n;
    c2 *= inv_n;
    T* dxr = dx + row * n;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float xhat = (ld(xr, i) - mu) * rs;
      st(dxr, i, (ld(w, i) * ld(dyr, i) - (xhat * c1 + c2)) * rs);
    }
  }
}

// One thread per column walks every row: rereads x and dy, as a separate sum over dim 0 does.
template <class T>
__global__ void __launch_bounds__(kReferenceThreads)
    ln_reference_columns(const T* __restrict__ dy, const T* __restrict__ x,
                         const float* __restrict__ mean, const float* __restrict__ rstd,
                         T* __restrict__ dw, T* __restrict__ db, std::int64_t rows,
                         std::int64_t n) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float a = 0.0f;
    float c = 0.0f;
    for (std::int64_t row = 0; row < rows; ++row) {
      const float g = ld(dy, row * n + j);
      a += g * ((ld(x, row * n + j) - mean[row]) * rstd[row]);
      c += g;
    }
    st(dw, j, a);
    st(db, j, c);
  }
}

int register_vpt(std::int64_t n) {
  for (int vpt = 1; vpt <= kMaxRegisterVpt; vpt *= 2) {
    if (n <= 1024 * static_cast<std::int64_t>(vpt)) return vpt;
  }
  return 0;
}

std::int64_t backward_blocks(std::int64_t rows, int sm_count) {
  return std::min<std::int64_t>(rows, 2 * static_cast<std::int64_t>(std::max(sm_count, 1)));
}

template <class T>
core::Status forward(Provider provider, const LayerNormForward& a, cudaStream_t stream) {
  const auto* x = static_cast<const T*>(a.x.data);
  const auto* w = static_cast<const T*>(a.weight.data);
  const auto* b = static_cast<const T*>(a.bias.data);
  auto* y = static_cast<T*>(a.y.data);
  auto* mean = static_cast<float*>(a.mean.data);
  auto* rstd = static_cast<float*>(a.rstd.data);
  const std::int64_t rows = a.x.rows;
  const std::int64_t n = a.x.cols;
  const auto eps = static_cast<float>(a.eps);
  const unsigned grid = row_blocks(rows);
  if (provider == Provider::Fused) {
    const int vpt = register_vpt(n);
    const int threads = threads_for(n, vpt == 0 ? kMaxRegisterVpt : vpt);
    switch (vpt) {
      case 1:
        ln_forward_fused_registers<T, 1>
            <<<grid, threads, 0, stream>>>(x, w, b, y, mean, rstd, rows, n, eps);
        break;
      case 2:
        ln_forward_fused_registers<T, 2>
            <<<grid, threads, 0, stream>>>(x, w, b, y, mean, rstd, rows, n, eps);
        break;
      case 4:
        ln_forward_fused_registers<T, 4>
            <<<grid, threads, 0, stream>>>(x, w, b, y, mean, rstd, rows, n, eps);
        break;
      case 8:
        ln_forward_fused_registers<T, 8>
            <<<grid, threads, 0, stream>>>(x, w, b, y, mean, rstd, rows, n, eps);
        break;
      default:
        ln_forward_fused_long<T><<<grid, 1024, 0, stream>>>(x, w, b, y, mean, rstd, rows, n, eps);
        break;
    }
    KW_CUDA_CHECK_LAUNCH("ln_forward_fused");
    return {};
  }
  ln_reference_mean<T><<<grid, kReferenceThreads, 0, stream>>>(x, mean, rows, n);
  KW_CUDA_CHECK_LAUNCH("ln_reference_mean");
  ln_reference_rstd<T><<<grid, kReferenceThreads, 0, stream>>>(x, mean, rstd, rows, n, eps);
  KW_CUDA_CHECK_LAUNCH("ln_reference_rstd");
  ln_reference_normalize<T>
      <<<elementwise_blocks(rows * n, kReferenceThreads), kReferenceThreads, 0, stream>>>(
          x, mean, rstd, w, b, y, rows * n, n);
  KW_CUDA_CHECK_LAUNCH("ln_reference_normalize");
  return {};
}

template <class T>
core::Status backward(Provider provider, const LayerNormBackward& a, DeviceWorkspace workspace,
                      int sm_count, cudaStream_t stream) {
  const auto* dy = static_cast<const T*>(a.dy.data);
  const auto* x = static_cast<const T*>(a.x.data);
  const auto* w = static_cast<const T*>(a.weight.data);
  const auto* mean = static_cast<const float*>(a.mean.data);
  const auto* rstd = static_cast<const float*>(a.rstd.data);
  auto* dx = static_cast<T*>(a.dx.data);
  auto* dw = static_cast<T*>(a.dweight.data);
  auto* db = static_cast<T*>(a.dbias.data);
  const std::int64_t rows = a.x.rows;
  const std::int64_t n = a.x.cols;
  const unsigned column_grid = elementwise_blocks(n, kReferenceThreads);
  if (provider == Provider::Fused) {
    const std::int64_t blocks = backward_blocks(rows, sm_count);
    const std::int64_t rows_per_block = ceil_div(rows, blocks);
    const std::int64_t used = ceil_div(rows, rows_per_block);
    auto* partials = static_cast<float*>(workspace.data);
    const auto grid = static_cast<unsigned>(used);
    const int vpt = register_vpt(n) <= kMaxBackwardRegisterVpt ? register_vpt(n) : 0;
    const int threads = threads_for(n, vpt == 0 ? kMaxRegisterVpt : vpt);
    switch (vpt) {
      case 1:
        ln_backward_fused_registers<T, 1, 1024><<<grid, threads, 0, stream>>>(
            dy, x, w, mean, rstd, dx, partials, rows, n, rows_per_block);
        break;
      case 2:
        ln_backward_fused_registers<T, 2, 1024><<<grid, threads, 0, stream>>>(
            dy, x, w, mean, rstd, dx, partials, rows, n, rows_per_block);
        break;
      case 4:
        ln_backward_fused_registers<T, 4, 1024><<<grid, threads, 0, stream>>>(
            dy, x, w, mean, rstd, dx, partials, rows, n, rows_per_block);
        break;
      default:
        ln_backward_fused_long<T><<<grid, 1024, 0, stream>>>(dy, x, w, mean, rstd, dx, partials,
                                                             rows, n, rows_per_block);
        break;
    }
    KW_CUDA_CHECK_LAUNCH("ln_backward_fused");
    ln_backward_reduce_partials<T>
        <<<column_grid, kReferenceThreads, 0, stream>>>(partials, used, n, dw, db);
    KW_CUDA_CHECK_LAUNCH("ln_backward_reduce_partials");
    return {};
  }
  ln_reference_dx<T>
      <<<row_blocks(rows), kReferenceThreads, 0, stream>>>(dy, x, w, mean, rstd, dx, rows, n);
  KW_CUDA_CHECK_LAUNCH("ln_reference_dx");
  ln_reference_columns<T>
      <<<column_grid, kReferenceThreads, 0, stream>>>(dy, x, mean, rstd, dw, db, rows, n);
  KW_CUDA_CHECK_LAUNCH("ln_reference_columns");
  return {};
}

}  // namespace
}  // namespace cuda

namespace {

std::size_t layer_norm_backward_cuda_workspace_bytes(Provider provider, std::int64_t rows,
                                                     std::int64_t hidden, int sm_count) {
  if (provider == Provider::Reference) return 0;
  return sizeof(float) * 2 * static_cast<std::size_t>(cuda::backward_blocks(rows, sm_count)) *
         static_cast<std::size_t>(hidden);
}

core::Status layer_norm_forward_cuda(Provider provider, const LayerNormForward& args,
                                     cudaStream_t stream) {
  if (args.x.type == ElementType::Fp32) return cuda::forward<float>(provider, args, stream);
  return cuda::forward<cuda::bf16>(provider, args, stream);
}

core::Status layer_norm_backward_cuda(Provider provider, const LayerNormBackward& args,
                                      DeviceWorkspace workspace, int sm_count,
                                      cudaStream_t stream) {
  if (args.x.type == ElementType::Fp32) {
    return cuda::backward<float>(provider, args, workspace, sm_count, stream);
  }
  return cuda::backward<cuda::bf16>(provider, args, workspace, sm_count, stream);
}

}  // namespace

const BackendOps& layer_norm_cuda_ops() {
  static const BackendOps ops{
      [](Provider provider, const CaseSpec& s, int sm_count) {
        return layer_norm_backward_cuda_workspace_bytes(provider, s.rows, s.cols, sm_count);
      },
      [](const PassArgs& a) {
        return layer_norm_forward_cuda(a.provider, layer_norm_forward_args(a), stream_of(a));
      },
      [](const PassArgs& a) {
        return layer_norm_backward_cuda(a.provider, layer_norm_backward_args(a), workspace_of(a),
                                        a.sm_count, stream_of(a));
      }};
  return ops;
}

}  // namespace kernelwatch::kernels::detail
