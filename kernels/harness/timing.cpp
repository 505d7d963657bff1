#include "kernels/harness/timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "kernels/detail/harness_cuda.hpp"

namespace kernelwatch::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ns(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::nano>(to - from).count();
}

// A host buffer larger than the last-level cache, read before each CPU repetition: the caches
// then hold clean lines of it, so the case reads its inputs from memory and no write-back of
// dirty flush lines lands inside the timed region.
class CpuFlush {
 public:
  // Written once here, so its page faults happen before the warm-up clock starts.
  explicit CpuFlush(std::size_t bytes) : bytes_(bytes), data_(new std::uint64_t[words(bytes)]) {
    for (std::size_t i = 0; i < words(bytes_); ++i) data_[i] = i * 0x9e3779b97f4a7c15ULL;
  }
  void read() {
    std::uint64_t acc = 0;
    for (std::size_t i = 0; i < words(bytes_); ++i) acc ^= data_[i];
    sink_ = acc;  // observed, so the loads stay
  }

 private:
  static std::size_t words(std::size_t bytes) { return std::max<std::size_t>(1, bytes / 8); }

  std::size_t bytes_;
  std::unique_ptr<std::uint64_t[]> data_;
  volatile std::uint64_t sink_ = 0;
};

std::size_t parse_cache_size(std::string text) {
  // sysfs writes "32768K" or "36M".
  std::size_t value = 0;
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9')
    value = value * 10 + static_cast<std::size_t>(text[i++] - '0');
  if (i < text.size() && (text[i] == 'K' || text[i] == 'k')) value <<= 10;
  if (i < text.size() && (text[i] == 'M' || text[i] == 'm')) value <<= 20;
  return value;
}

core::Result<Timings> time_cpu(Case& c, const TimingPolicy& policy) {
  Timings timings;
  timings.flush_bytes = flush_bytes_for(Backend::Cpu, policy);
  CpuFlush flush(timings.flush_bytes);

  // Warm-up by budget; its last runs estimate one repetition's time.
  const auto warmup_end = Clock::now() + policy.warmup;
  std::vector<double> warmup_ns;
  do {
    flush.read();
    const auto start = Clock::now();
    KW_TRY(c.run());
    warmup_ns.push_back(elapsed_ns(start, Clock::now()));
    ++timings.warmup_runs;
  } while (Clock::now() < warmup_end);

  // The median warm-up run, not the last: one slow run would cut the repetitions short.
  std::sort(warmup_ns.begin(), warmup_ns.end());
  const int count = repetitions_for(policy, warmup_ns[warmup_ns.size() / 2]);
  timings.samples_ns.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    flush.read();
    const auto start = Clock::now();
    KW_TRY(c.run());
    timings.samples_ns.push_back(elapsed_ns(start, Clock::now()));
  }
  return timings;
}

}  // namespace

std::size_t default_cpu_flush_bytes() {
  std::size_t largest = 0;
  std::error_code ec;
  const std::filesystem::path base = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    std::ifstream in(entry.path() / "size");
    std::string text;
    if (in >> text) largest = std::max(largest, parse_cache_size(text));
  }
  if (largest == 0) return std::size_t{64} << 20;
  return std::max<std::size_t>(2 * largest, std::size_t{8} << 20);
}

std::size_t flush_bytes_for(Backend backend, const TimingPolicy& policy) {
  if (backend == Backend::Cuda) return policy.cuda_flush_bytes;
  return policy.cpu_flush_bytes != 0 ? policy.cpu_flush_bytes : default_cpu_flush_bytes();
}

int repetitions_for(const TimingPolicy& policy, double estimated_ns) {
  const double budget_ns = std::chrono::duration<double, std::nano>(policy.repetitions).count();
  const double wanted =
      estimated_ns > 0 ? std::ceil(budget_ns / estimated_ns) : policy.max_repetitions;
  return static_cast<int>(
      std::clamp(wanted, static_cast<double>(policy.min_repetitions),
                 static_cast<double>(std::max(policy.min_repetitions, policy.max_repetitions))));
}

core::Result<Timings> time_case(Case& c, const TimingPolicy& policy) {
  if (policy.min_repetitions < 1) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      "timing: min_repetitions must be at least 1");
  }
  if (c.id().backend == Backend::Cuda) return detail::time_cuda_case(c, policy);
  return time_cpu(c, policy);
}

}  // namespace kernelwatch::kernels
