#include "kernels/detail/fill.hpp"

#include "kernels/detail/cpu_parallel.hpp"

namespace kernelwatch::kernels::detail {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t h = mix(mix(seed ^ mix(stream)) + index);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

void put(void* dst, ElementType type, std::int64_t i, double value) {
  if (type == ElementType::Fp32) {
    static_cast<float*>(dst)[i] = static_cast<float>(value);
  } else {
    static_cast<Bf16*>(dst)[i] = to_bf16(static_cast<float>(value));
  }
}

void fill_uniform(const TensorPlan& tensor, std::uint64_t seed, std::uint64_t stream, double offset,
                  double width, void* host) {
  parallel_blocks(tensor.rows * tensor.cols, 65536, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      put(host, tensor.type, i,
          offset + width * uniform(seed, stream, static_cast<std::uint64_t>(i)));
    }
  });
}

}  // namespace kernelwatch::kernels::detail
