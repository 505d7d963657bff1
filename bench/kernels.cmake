# kernels benchmarks: bandwidth of every CPU case (and CUDA case where a GPU is present) against
# the machine's memcpy bandwidth, fused vs reference. See docs/PERFORMANCE.md, "## Kernels".
add_executable(kernels_bench kernels/kernels_bench.cpp)
kernelwatch_target_defaults(kernels_bench)
target_link_libraries(kernels_bench PRIVATE kernelwatch::kernels Threads::Threads)

# The measurement harness's own cost per repetition (timer reads, cache flush).
add_executable(kw_bench_harness_overhead kernels/harness_overhead.cpp)
kernelwatch_target_defaults(kw_bench_harness_overhead)
target_link_libraries(kw_bench_harness_overhead PRIVATE kernelwatch::kernels)
