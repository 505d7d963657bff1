// A real Google Benchmark program (Debian's libbenchmark) that the command e2e test runs through
// the daemon: a saxpy-like loop over a few sizes. It reads a slowdown factor from the file named
// by KW_SLOWDOWN_FILE (absent or unreadable: 1; a decimal such as 1.1 is allowed) and does that
// much work: floor(factor) whole passes plus one pass over round(n * fraction) elements, so an
// integer factor repeats the work exactly as before, and a test can make it slower without
// changing its command, its environment or its key.
//
// With KW_PASS_NS set (nanoseconds per pass, 1..1e9) it does the same work but reports manual time,
// as GPU benchmarks report CUDA-event time: each iteration takes factor * KW_PASS_NS, times a
// repetition's own wiggle of at most +-1% (the n-th run of the function, so every process reports
// the same times). A test that judges verdicts uses it so that they do not depend on this
// machine's load; the benchmark's name gains gbench's "/manual_time".
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

// The work of one iteration: `factor` passes of y = a * x + y (see above).
class Saxpy {
 public:
  explicit Saxpy(std::size_t n, double factor)
      : x_(n, 1.0f),
        y_(n, 2.0f),
        repeat_(static_cast<int>(std::floor(factor))),
        partial_(static_cast<std::size_t>(
            std::llround(static_cast<double>(n) * (factor - std::floor(factor))))) {}

  void operator()() {
    for (int r = 0; r < repeat_; ++r) pass(x_.size());
    pass(partial_ < x_.size() ? partial_ : x_.size());
  }

 private:
  void pass(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) y_[i] = 1.0001f * x_[i] + y_[i];
    benchmark::DoNotOptimize(y_.data());
    benchmark::ClobberMemory();
  }

  std::vector<float> x_;
  std::vector<float> y_;
  int repeat_;
  std::size_t partial_;
};

void set_bytes(benchmark::State& state) {
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * state.range(0) * 3 * sizeof(float)));
}

void BM_Saxpy(benchmark::State& state) {
  Saxpy saxpy(static_cast<std::size_t>(state.range(0)), slowdown());
  for (auto _ : state) saxpy();
  set_bytes(state);
}

// KW_PASS_NS, or 0 when absent or not a number in 1..1e9.
double pass_ns() {
  const char* text = std::getenv("KW_PASS_NS");
  if (text == nullptr) return 0;
  char* end = nullptr;
  const double ns = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(ns >= 1) || ns > 1e9) return 0;
  return ns;
}

void BM_SaxpyTimed(benchmark::State& state) {
  static int calls = 0;
  const double wiggle = 1.0 + 0.005 * static_cast<double>(calls++ % 5 - 2);
  const double factor = slowdown();
  const double seconds = factor * pass_ns() * wiggle * 1e-9;
  Saxpy saxpy(static_cast<std::size_t>(state.range(0)), factor);
  for (auto _ : state) {
    saxpy();
    state.SetIterationTime(seconds);
  }
  set_bytes(state);
}

}  // namespace

int main(int argc, char** argv) {
  if (pass_ns() > 0) {
    benchmark::RegisterBenchmark("BM_Saxpy", BM_SaxpyTimed)
        ->Arg(16384)
        ->Arg(65536)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  } else {
    benchmark::RegisterBenchmark("BM_Saxpy", BM_Saxpy)
        ->Arg(16384)
        ->Arg(65536)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
