# Dashboard benchmark: a scratch database of 5,000 keys and one key of 10,000 runs, the overview
# and key page rendered in process (the served figures: the daemon + kw_bench_status_load).
add_executable(kw_bench_dashboard ${CMAKE_CURRENT_LIST_DIR}/web/dashboard_bench.cpp)
kernelwatch_target_defaults(kw_bench_dashboard)
target_link_libraries(kw_bench_dashboard PRIVATE kernelwatch::web)
