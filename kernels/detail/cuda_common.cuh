// Private to kernels/ (.cu files only): device helpers shared by the CUDA kernels: fp32/bf16
// loads and stores with fp32 math, deterministic block reductions, launch-size helpers.
// May include the CUDA headers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace kernelwatch::kernels::detail::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ld(const float* data, std::int64_t i) {
  return data[i];
}
__device__ __forceinline__ float ld(const bf16* data, std::int64_t i) {
  return __bfloat162float(data[i]);
}
__device__ __forceinline__ void st(float* data, std::int64_t i, float value) {
  data[i] = value;
}
__device__ __forceinline__ void st(bf16* data, std::int64_t i, float value) {
  data[i] = __float2bfloat16_rn(value);
}

// A butterfly: every lane adds the same operands in the same order, so all lanes agree.
__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

__device__ __forceinline__ long long warp_sum(long long value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

// Sum over the block, returned to every thread, in an order fixed by blockDim alone.
// blockDim.x must be a multiple of 32 (at most 1024); scratch holds 33 values; every thread of
// the block must call it.
template <class V>
__device__ __forceinline__ V block_sum(V value, V* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  value = warp_sum(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    V total = lane < warps ? scratch[lane] : V(0);
    total = warp_sum(total);
    if (lane == 0) scratch[32] = total;
  }
  __syncthreads();
  const V total = scratch[32];
  __syncthreads();
  return total;
}

// Two sums at once (scratch holds 66 values).
__device__ __forceinline__ void block_sum2(float& first, float& second, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  first = warp_sum(first);
  second = warp_sum(second);
  if (lane == 0) {
    scratch[warp] = first;
    scratch[33 + warp] = second;
  }
  __syncthreads();
  if (warp == 0) {
    float a = lane < warps ? scratch[lane] : 0.0f;
    float b = lane < warps ? scratch[33 + lane] : 0.0f;
    a = warp_sum(a);
    b = warp_sum(b);
    if (lane == 0) {
      scratch[32] = a;
      scratch[65] = b;
    }
  }
  __syncthreads();
  first = scratch[32];
  second = scratch[65];
  __syncthreads();
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Threads for a row of n elements with vpt values per thread: a multiple of 32, at most 1024.
inline int threads_for(std::int64_t n, int vpt) {
  const std::int64_t threads = ceil_div(ceil_div(n, vpt), 32) * 32;
  return static_cast<int>(threads < 32 ? 32 : (threads > 1024 ? 1024 : threads));
}

// Blocks of a grid-stride elementwise kernel over `count` elements.
inline unsigned elementwise_blocks(std::int64_t count, int threads) {
  const std::int64_t blocks = ceil_div(count, threads);
  return static_cast<unsigned>(blocks > (1 << 18) ? (1 << 18) : blocks);
}

}  // namespace kernelwatch::kernels::detail::cuda
