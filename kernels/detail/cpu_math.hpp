// Private to kernels/: element loads and stores (fp32 or bf16 storage, fp32 math) and the
// fixed-order lane sums the CPU kernels use, written so g++ vectorizes them without -ffast-math.
// Plain C++ only.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace kernelwatch::kernels::detail {

// bf16 is handled as its raw 16 bits so that loops over it vectorize.
using Bf16Bits = std::uint16_t;

inline float load(const float* data, std::int64_t i) {
  return data[i];
}
inline float load(const Bf16Bits* data, std::int64_t i) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(data[i]) << 16);
}

inline void store(float* data, std::int64_t i, float value) {
  data[i] = value;
}
// Round to nearest even; the kernels never produce NaN from finite inputs, so the NaN case of
// to_bf16() is left out to keep the loop branch-free.
inline void store(Bf16Bits* data, std::int64_t i, float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  data[i] = static_cast<Bf16Bits>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline constexpr int kLanes = 16;
inline constexpr std::int64_t kSumChunk = 1024;

// Pairwise sum of the 16 lanes in a fixed order.
inline float reduce_lanes(const float (&lanes)[kLanes]) {
  float pairs[kLanes / 2];
  for (int l = 0; l < kLanes / 2; ++l) pairs[l] = lanes[l] + lanes[l + kLanes / 2];
  float quads[kLanes / 4];
  for (int l = 0; l < kLanes / 4; ++l) quads[l] = pairs[l] + pairs[l + kLanes / 4];
  return (quads[0] + quads[2]) + (quads[1] + quads[3]);
}

// Sum of value(i) for i in [0, n): 16 independent fp32 lanes inside chunks of 1024, the chunk
// sums added in order. The order depends only on n, so the result is reproducible.
template <class Value>
inline float lane_sum(std::int64_t n, Value value) {
  float total = 0.0f;
  for (std::int64_t chunk = 0; chunk < n; chunk += kSumChunk) {
    const std::int64_t end = std::min(n, chunk + kSumChunk);
    float lanes[kLanes] = {};
    std::int64_t i = chunk;
    for (; i + kLanes <= end; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += value(i + l);
    }
    // A separate tail accumulator: indexing the lanes with a variable would keep them in memory.
    float tail = 0.0f;
    for (; i < end; ++i) tail += value(i);
    total += reduce_lanes(lanes) + tail;
  }
  return total;
}

}  // namespace kernelwatch::kernels::detail
