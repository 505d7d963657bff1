// Private to kernels/: the row plumbing of the CPU kernels over rows x hidden tensors (LayerNorm,
// RMSNorm, TVD): the row loop on the CPU pool, the choice of fp32 or bf16 storage, and the two
// deterministic column reductions of a backward's weight gradients (the fused provider's
// per-block partials, the reference provider's rereading strips). Only the loops live here: what
// a row computes stays in its kernel's folder, so the floating-point operations and their order
// are the kernel's own. Plain C++ only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/detail/cpu_math.hpp"
#include "kernels/detail/cpu_parallel.hpp"
#include "kernels/types.hpp"

namespace kernelwatch::kernels::detail {

// Rows per parallel task: about 64 KiB of x, so a task is worth handing out.
inline std::int64_t row_grain(std::int64_t hidden) {
  return std::max<std::int64_t>(1, 16384 / hidden);
}

// body(r) for every row r in [0, rows), in parallel tasks of `grain` consecutive rows.
template <class Body>
void for_each_row(std::int64_t rows, std::int64_t grain, const Body& body) {
  parallel_blocks(rows, grain, [&body](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) body(r);
  });
}

// body.template operator()<S>() with S the storage of `type`: float for fp32, Bf16Bits for bf16
// (the validators have ruled out any other type).
template <class Body>
void with_storage(ElementType type, const Body& body) {
  if (type == ElementType::Fp32) {
    body.template operator()<float>();
  } else {
    body.template operator()<Bf16Bits>();
  }
}

// The fused backwards' row blocks: a function of the shape only, so the weight-gradient partials
// and their reduction order never depend on the thread count.
inline constexpr std::int64_t kRowBlocks = 64;
inline std::int64_t row_blocks(std::int64_t rows) {
  return std::min(rows, kRowBlocks);
}

// Scratch bytes of block_partials(): `sums` fp32 partials of `hidden` columns per row block.
inline std::size_t block_partials_bytes(std::int64_t rows, std::int64_t hidden, int sums) {
  if (rows <= 0 || hidden <= 0) return 0;
  return sizeof(float) * static_cast<std::size_t>(sums) *
         static_cast<std::size_t>(row_blocks(rows)) * static_cast<std::size_t>(hidden);
}

// A fused backward's one pass over the rows with its column sums (dweight, dbias): the rows are
// cut into row_blocks(rows) blocks run in parallel; rows(begin, end, partials) handles a block's
// rows and adds into its kSums x n partials (zeroed first; sum k at partials + k * n). Then each
// column's sum k is the block partials added in block order, stored to out[k].
template <class S, std::size_t kSums, class Rows>
void block_partials(std::int64_t rows, std::int64_t n, float* partials,
                    const std::array<S*, kSums>& out, const Rows& rows_of_block) {
  constexpr auto kCount = static_cast<std::int64_t>(kSums);
  const std::int64_t blocks = row_blocks(rows);
  const std::int64_t rows_per_block = (rows + blocks - 1) / blocks;
  parallel_for(blocks, [&](std::int64_t block) {
    float* block_sums = partials + block * kCount * n;
    std::memset(block_sums, 0, sizeof(float) * kSums * static_cast<std::size_t>(n));
    const std::int64_t end = std::min(rows, (block + 1) * rows_per_block);
    rows_of_block(block * rows_per_block, end, block_sums);
  });
  // Deterministic reduction of the partials: block order is fixed for every column.
  constexpr std::int64_t kColumns = 1024;
  const std::int64_t used_blocks = (rows + rows_per_block - 1) / rows_per_block;
  parallel_blocks(n, kColumns, [&](std::int64_t begin, std::int64_t end) {
    float sums[kSums][kColumns] = {};
    const std::int64_t width = end - begin;
    for (std::int64_t block = 0; block < used_blocks; ++block) {
      for (std::int64_t k = 0; k < kCount; ++k) {
        const float* block_sum = partials + (block * kCount + k) * n + begin;
        for (std::int64_t j = 0; j < width; ++j) sums[k][j] += block_sum[j];
      }
    }
    for (std::size_t k = 0; k < kSums; ++k) {
      for (std::int64_t j = 0; j < width; ++j) store(out[k], begin + j, sums[k][j]);
    }
  });
}

// Column strips of a reference backward's column reduction (kColumnStrip columns each).
inline constexpr std::int64_t kColumnStrip = 256;
template <std::size_t kSums>
using StripSums = float[kSums][kColumnStrip];

// A reference backward's column sums, as autograd's composite ops reduce: strips of columns in
// parallel, each rereading every row in order; add_row(r, begin, width, sums) adds row r's terms
// of columns [begin, begin + width) to sums[k][0, width). Column j's sum k is stored to out[k].
template <class S, std::size_t kSums, class AddRow>
void column_sums(std::int64_t rows, std::int64_t n, const std::array<S*, kSums>& out,
                 const AddRow& add_row) {
  parallel_blocks(n, kColumnStrip, [&](std::int64_t begin, std::int64_t end) {
    StripSums<kSums> sums = {};
    const std::int64_t width = end - begin;
    for (std::int64_t r = 0; r < rows; ++r) add_row(r, begin, width, sums);
    for (std::size_t k = 0; k < kSums; ++k) {
      for (std::int64_t j = 0; j < width; ++j) store(out[k], begin + j, sums[k][j]);
    }
  });
}

}  // namespace kernelwatch::kernels::detail
