# Notifier benchmarks: outbox drain throughput and memory against the tests' local receiver.
if(NOT TARGET kw_notifiers_test_support)
  add_library(kw_notifiers_test_support STATIC
    ${PROJECT_SOURCE_DIR}/tests/notifiers/support/test_receiver.cpp
    ${PROJECT_SOURCE_DIR}/tests/notifiers/support/test_pki.cpp
    ${PROJECT_SOURCE_DIR}/tests/notifiers/support/spawn.cpp)
  kernelwatch_target_defaults(kw_notifiers_test_support)
  target_link_libraries(kw_notifiers_test_support PUBLIC kernelwatch::core Boost::headers
    OpenSSL::SSL OpenSSL::Crypto nlohmann_json::nlohmann_json Threads::Threads)
endif()
add_executable(kw_bench_deliver ${CMAKE_CURRENT_LIST_DIR}/notifiers/deliver_bench.cpp)
kernelwatch_target_defaults(kw_bench_deliver)
target_link_libraries(kw_bench_deliver PRIVATE kernelwatch::notifiers kw_notifiers_test_support)
