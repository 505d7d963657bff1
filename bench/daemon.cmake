# Daemon benchmarks: a keep-alive HTTP/1.1 load generator for the status API (loopback only).
add_executable(kw_bench_status_load ${CMAKE_CURRENT_LIST_DIR}/daemon/status_load.cpp)
kernelwatch_target_defaults(kw_bench_status_load)
find_package(Threads REQUIRED)
target_link_libraries(kw_bench_status_load PRIVATE Threads::Threads)
