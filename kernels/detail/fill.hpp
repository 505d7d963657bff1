// Private to kernels/: the seeded input values every kernel's fill_input() is made of. A value is
// a pure function of (seed, stream, element index), so it never depends on how the filling is
// split across threads, and each kernel names its tensors' streams. Plain C++ and core/ only.
#pragma once

#include <cstdint>

#include "kernels/catalogue.hpp"

namespace kernelwatch::kernels::detail {

// A counter-based uniform in [0, 1).
[[nodiscard]] double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);

// Stores `value` as element i of an fp32 or bf16 tensor.
void put(void* dst, ElementType type, std::int64_t i, double value);

// Every element of `tensor`: offset + width * uniform(seed, stream, i), in parallel on the CPU
// pool.
void fill_uniform(const TensorPlan& tensor, std::uint64_t seed, std::uint64_t stream, double offset,
                  double width, void* host);

}  // namespace kernelwatch::kernels::detail
