// kernels_bench: the achieved bandwidth of each kernel case against its bandwidth floor
// (Case::bytes_moved) and the machine's memcpy bandwidth, and fused vs reference speed, all in
// one run. Prints Markdown for docs/PERFORMANCE.md.
//
//   kernels_bench [--threads N] [--repeat R] [--backend cpu|cuda] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/catalogue.hpp"
#include "kernels/cpu_threads.hpp"
#include "kernels/registry.hpp"

namespace {

using kernelwatch::core::Pass;
using kernelwatch::core::Provider;
using kernelwatch::kernels::Backend;
using kernelwatch::kernels::Case;
using kernelwatch::kernels::CaseId;
using kernelwatch::kernels::CaseSpec;
using kernelwatch::kernels::DType;
using kernelwatch::kernels::KernelRef;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

struct Measurement {
  double seconds = 0;  // median
  double best = 0;     // fastest run: the machine is shared, other work only slows a run down
  double gbps = 0;     // at the median
  double best_gbps = 0;
};

Measurement summarize(std::vector<double> times, double bytes) {
  Measurement m;
  m.seconds = median(times);
  m.best = *std::min_element(times.begin(), times.end());
  m.gbps = bytes / m.seconds / 1e9;
  m.best_gbps = bytes / m.best / 1e9;
  return m;
}

// memcpy of a 512 MiB buffer split over `threads` threads; counts read + write bytes, like the
// kernels' floors do. `repeat` runs after a warm-up.
Measurement memcpy_bandwidth(int threads, int repeat) {
  const std::size_t bytes = std::size_t{512} << 20;
  std::unique_ptr<char[]> source(new char[bytes]);
  std::unique_ptr<char[]> target(new char[bytes]);
  std::memset(source.get(), 1, bytes);
  std::memset(target.get(), 2, bytes);
  std::vector<double> times;
  for (int run = 0; run <= repeat; ++run) {
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    const std::size_t slice = bytes / static_cast<std::size_t>(threads);
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back(
          [&, t] { std::memcpy(target.get() + t * slice, source.get() + t * slice, slice); });
    }
    for (auto& worker : workers) worker.join();
    if (run > 0) times.push_back(seconds_since(start));
  }
  return summarize(times, 2.0 * static_cast<double>(bytes));
}

std::unique_ptr<Case> prepared(const CaseId& id, const CaseSpec& spec) {
  auto created = kernelwatch::kernels::create_case(id, spec);
  if (!created) {
    std::fprintf(stderr, "%s: %s\n", id.name().c_str(), created.error().message.c_str());
    std::exit(1);
  }
  if (auto ok = (*created)->prepare(1); !ok) {
    std::fprintf(stderr, "%s: %s\n", id.name().c_str(), ok.error().message.c_str());
    std::exit(1);
  }
  return std::move(*created);
}

double timed_run(Case& instance) {
  const auto start = Clock::now();
  if (auto ok = instance.run(); !ok) {
    std::fprintf(stderr, "%s: %s\n", instance.id().name().c_str(), ok.error().message.c_str());
    std::exit(1);
  }
  return seconds_since(start);
}

// Fused and reference runs alternate, so that both see the same (shared) machine and their
// ratio is measured in one run; two warm-up runs each (page faults, caches).
std::pair<Measurement, Measurement> measure_pair(const CaseId& fused_id, const CaseId& reference_id,
                                                 const CaseSpec& spec, int repeat) {
  auto fused = prepared(fused_id, spec);
  auto reference = prepared(reference_id, spec);
  std::vector<double> fused_times;
  std::vector<double> reference_times;
  for (int run = -2; run < repeat; ++run) {
    const double f = timed_run(*fused);
    const double r = timed_run(*reference);
    if (run >= 0) {
      fused_times.push_back(f);
      reference_times.push_back(r);
    }
  }
  return {summarize(fused_times, static_cast<double>(fused->bytes_moved())),
          summarize(reference_times, static_cast<double>(reference->bytes_moved()))};
}

std::string shape(KernelRef kernel, const CaseSpec& spec) {
  const auto& axes = kernel->bench_shape;
  return std::string(axes.rows_flag) + " " + std::to_string(spec.rows) + " x " +
         std::string(axes.cols_flag) + " " + std::to_string(spec.cols) + " " +
         std::string(kernelwatch::core::to_string(spec.dtype));
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  int repeat = 10;
  bool quick = false;
  Backend backend = Backend::Cpu;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--backend" && i + 1 < argc) {
      auto parsed = kernelwatch::kernels::parse_backend(argv[++i]);
      if (!parsed) {
        std::fprintf(stderr, "%s\n", parsed.error().message.c_str());
        return 2;
      }
      backend = *parsed;
    } else if (arg == "--quick") {
      quick = true;
    } else {
      std::fprintf(stderr,
                   "usage: kernels_bench [--threads N] [--repeat R] [--backend cpu|cuda] "
                   "[--quick]\n");
      return 2;
    }
  }
  if (auto ok = kernelwatch::kernels::backend_available(backend); !ok) {
    std::fprintf(stderr, "%s\n", ok.error().message.c_str());
    return 1;
  }
  kernelwatch::kernels::set_cpu_threads(threads);
  const int used_threads = kernelwatch::kernels::cpu_threads();
  const Measurement copy = memcpy_bandwidth(used_threads, repeat);
  std::printf("backend %s, %d CPU threads, %d timed runs (median) after 2 warm-ups\n\n",
              std::string(kernelwatch::kernels::to_string(backend)).c_str(), used_threads, repeat);
  std::printf(
      "memcpy (512 MiB, %d threads, read + write bytes): %.2f GB/s median, %.2f GB/s "
      "best\n\n",
      used_threads, copy.gbps, copy.best_gbps);

  struct Workload {
    KernelRef kernel;
    CaseSpec spec;
  };
  std::vector<Workload> workloads;
  const std::int64_t scale = quick ? 4 : 1;
  for (DType dtype : {DType::Fp32, DType::Bf16}) {
    CaseSpec ln;
    ln.rows = 4096 / scale;
    ln.cols = 4096;
    ln.dtype = dtype;
    workloads.push_back({KernelRef("layer_norm"), ln});
    CaseSpec tvd;
    tvd.rows = 2048 / scale;
    tvd.cols = 32768;
    tvd.dtype = dtype;
    workloads.push_back({KernelRef("tvd"), tvd});
  }
  std::printf(
      "| benchmark | workload | provider | floor (MB) | median (ms) | GB/s | %% of memcpy "
      "| best (ms) | best GB/s | best %% of best memcpy | fused / reference (median) |\n");
  std::printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& workload : workloads) {
    for (Pass pass : {Pass::Forward, Pass::Backward, Pass::Full}) {
      std::map<Provider, Measurement> results;
      const auto [fused, reference] = measure_pair(
          CaseId{workload.kernel, pass, Provider::Fused, backend},
          CaseId{workload.kernel, pass, Provider::Reference, backend}, workload.spec, repeat);
      results[Provider::Fused] = fused;
      results[Provider::Reference] = reference;
      const double ratio = results[Provider::Reference].seconds / results[Provider::Fused].seconds;
      for (Provider provider : {Provider::Fused, Provider::Reference}) {
        const CaseId id{workload.kernel, pass, provider, backend};
        const auto& m = results[provider];
        const std::string ratio_text =
            provider == Provider::Fused ? std::to_string(ratio).substr(0, 4) + "x" : "";
        std::printf("| %s | %s | %s | %.1f | %.2f | %.2f | %.0f%% | %.2f | %.2f | %.0f%% | %s |\n",
                    id.benchmark().c_str(), shape(workload.kernel, workload.spec).c_str(),
                    std::string(kernelwatch::core::to_string(provider)).c_str(),
                    static_cast<double>(kernelwatch::kernels::bytes_moved(id, workload.spec)) / 1e6,
                    m.seconds * 1e3, m.gbps, 100.0 * m.gbps / copy.gbps, m.best * 1e3, m.best_gbps,
                    100.0 * m.best_gbps / copy.best_gbps, ratio_text.c_str());
      }
    }
  }
  return 0;
}
