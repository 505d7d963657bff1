// A real Google Benchmark program (Debian's libbenchmark) that the command e2e test runs through
// the daemon: a saxpy-like loop over a few sizes. It reads a slowdown factor from the file named
// by KW_SLOWDOWN_FILE (absent or unreadable: 1; a decimal such as 1.1 is allowed) and does that
// much work: floor(factor) whole passes plus one pass over round(n * fraction) elements, so an
// integer factor repeats the work exactly as before, and a test can make it slower without
// changing its command, its environment or its key.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace {

double slowdown() {
  const char* path = std::getenv("KW_SLOWDOWN_FILE");
  if (path == nullptr) return 1;
  std::ifstream in(path);
  double factor = 1;
  if (!(in >> factor) || !(factor >= 1) || factor > 1e6) return 1;
  return factor;
}

void BM_Saxpy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<float> x(n, 1.0f);
  std::vector<float> y(n, 2.0f);
  const double factor = slowdown();
  const auto repeat = static_cast<int>(std::floor(factor));
  const auto partial = static_cast<std::size_t>(
      std::llround(static_cast<double>(n) * (factor - static_cast<double>(repeat))));
  for (auto _ : state) {
    for (int r = 0; r < repeat; ++r) {
      for (std::size_t i = 0; i < n; ++i) y[i] = 1.0001f * x[i] + y[i];
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    for (std::size_t i = 0; i < partial && i < n; ++i) y[i] = 1.0001f * x[i] + y[i];
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 3 * sizeof(float)));
}
BENCHMARK(BM_Saxpy)->Arg(16384)->Arg(65536)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
