# Storage benchmarks: import throughput and a key's newest-N query on a large database.
add_executable(kw_bench_import ${CMAKE_CURRENT_LIST_DIR}/storage/import_bench.cpp)
kernelwatch_target_defaults(kw_bench_import)
target_link_libraries(kw_bench_import PRIVATE kernelwatch::storage kernelwatch::runners)

add_executable(kw_bench_history ${CMAKE_CURRENT_LIST_DIR}/storage/history_bench.cpp)
kernelwatch_target_defaults(kw_bench_history)
target_link_libraries(kw_bench_history PRIVATE kernelwatch::storage)
