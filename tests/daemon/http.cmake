# The daemon's HTTP server and Prometheus builder; included from tests/daemon/CMakeLists.txt.
kernelwatch_test(daemon_http_test
  ${CMAKE_CURRENT_LIST_DIR}/http_server_test.cpp ${CMAKE_CURRENT_LIST_DIR}/prometheus_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/connection_slots_test.cpp ${CMAKE_CURRENT_LIST_DIR}/asio_timer_test.cpp
  LIBS kernelwatch::daemon_http)
