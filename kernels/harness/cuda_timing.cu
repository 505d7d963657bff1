// CUDA timing: one event pair per repetition on the case's stream and, before each start event,
// a kernel that reads the flush buffer (larger than L2): L2 then holds clean lines of that
// buffer, so each repetition reads its inputs from HBM and no dirty write-back of a memset
// lands inside the timed window.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "kernels/detail/cuda_check.hpp"
#include "kernels/detail/harness_cuda.hpp"

namespace kernelwatch::kernels::detail {
namespace {

// Reads every 16-byte word of the buffer; the xor keeps the loads (it is written only in the
// impossible case that it equals the sentinel).
__global__ void __launch_bounds__(256)
    kw_flush_read(const uint4* data, std::size_t words, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t{256} + threadIdx.x; i < words;
       i += std::size_t{gridDim.x} * 256) {
    const uint4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

struct DeviceFree {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
struct EventDestroy {
  void operator()(CUevent_st* e) const noexcept { cudaEventDestroy(e); }
};
using Event = std::unique_ptr<CUevent_st, EventDestroy>;

core::Result<Event> make_event() {
  cudaEvent_t raw = nullptr;
  KW_CUDA_TRY(cudaEventCreate(&raw));
  return Event(raw);
}

}  // namespace

core::Result<Timings> time_cuda_case(Case& c, const TimingPolicy& policy) {
  Timings timings;
  timings.flush_bytes = policy.cuda_flush_bytes;
  auto stream = static_cast<cudaStream_t>(c.stream());
  void* raw_flush = nullptr;
  if (timings.flush_bytes > 0) {
    KW_CUDA_TRY(cudaMalloc(&raw_flush, timings.flush_bytes + sizeof(unsigned)));
  }
  const std::unique_ptr<void, DeviceFree> flush(raw_flush);
  if (timings.flush_bytes > 0) {
    KW_CUDA_TRY(cudaMemsetAsync(flush.get(), 0, timings.flush_bytes + sizeof(unsigned), stream));
  }
  const std::size_t words = timings.flush_bytes / sizeof(uint4);
  const auto flush_once = [&](int) -> core::Status {
    if (words == 0) return {};
    auto* data = static_cast<const uint4*>(flush.get());
    auto* sink = reinterpret_cast<unsigned*>(static_cast<char*>(flush.get()) + timings.flush_bytes);
    kw_flush_read<<<1024, 256, 0, stream>>>(data, words, sink);
    KW_CUDA_CHECK_LAUNCH("kw_flush_read");
    return {};
  };

  const Event start = KW_TRY(make_event());
  const Event stop = KW_TRY(make_event());

  // Warm-up by budget on the host clock; each warm-up run is timed with events too, and their
  // median estimates a repetition.
  const auto warmup_end = std::chrono::steady_clock::now() + policy.warmup;
  std::vector<float> warmup_ms;
  do {
    KW_TRY(flush_once(timings.warmup_runs));
    KW_CUDA_TRY(cudaEventRecord(start.get(), stream));
    KW_TRY(c.launch());
    KW_CUDA_TRY(cudaEventRecord(stop.get(), stream));
    KW_TRY(c.synchronize());
    float ms = 0;
    KW_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    warmup_ms.push_back(ms);
    ++timings.warmup_runs;
  } while (std::chrono::steady_clock::now() < warmup_end);

  // The median warm-up run, not the last: one slow run would cut the repetitions short.
  std::sort(warmup_ms.begin(), warmup_ms.end());
  const int count =
      repetitions_for(policy, static_cast<double>(warmup_ms[warmup_ms.size() / 2]) * 1e6);
  std::vector<Event> starts;
  std::vector<Event> stops;
  starts.reserve(static_cast<std::size_t>(count));
  stops.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    starts.push_back(KW_TRY(make_event()));
    stops.push_back(KW_TRY(make_event()));
  }
  for (int i = 0; i < count; ++i) {
    KW_TRY(flush_once(i));
    KW_CUDA_TRY(cudaEventRecord(starts[static_cast<std::size_t>(i)].get(), stream));
    KW_TRY(c.launch());
    KW_CUDA_TRY(cudaEventRecord(stops[static_cast<std::size_t>(i)].get(), stream));
  }
  KW_TRY(c.synchronize());
  timings.samples_ns.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    float ms = 0;
    KW_CUDA_TRY(cudaEventElapsedTime(&ms, starts[static_cast<std::size_t>(i)].get(),
                                     stops[static_cast<std::size_t>(i)].get()));
    timings.samples_ns.push_back(static_cast<double>(ms) * 1e6);
  }
  return timings;
}

}  // namespace kernelwatch::kernels::detail
