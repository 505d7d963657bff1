// How many threads the CPU backend of every kernel uses. Results never depend on it: the CPU
// kernels split work into blocks fixed by the shape alone and reduce them in a fixed order.
// Plain C++; the pool itself lives in cpu_threads.cpp.
#pragma once

namespace kernelwatch::kernels {

// 0 means std::thread::hardware_concurrency(). Takes effect at the next kernel call; not to be
// called while a CPU kernel runs on another thread.
void set_cpu_threads(int threads);
// The number of threads a CPU kernel call uses now (at least 1).
[[nodiscard]] int cpu_threads();

}  // namespace kernelwatch::kernels
