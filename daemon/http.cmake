# daemon HTTP pieces: the Beast HTTP server (Beast is confined to http_server.cpp) and the
# Prometheus text builder. Included from daemon/CMakeLists.txt; kw_daemon links kw_daemon_http.
add_library(kw_daemon_http STATIC
  ${CMAKE_CURRENT_LIST_DIR}/http_server.cpp ${CMAKE_CURRENT_LIST_DIR}/http_parts.cpp
  ${CMAKE_CURRENT_LIST_DIR}/connection_slots.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prometheus.cpp)
add_library(kernelwatch::daemon_http ALIAS kw_daemon_http)
kernelwatch_target_defaults(kw_daemon_http)
target_link_libraries(kw_daemon_http
  PUBLIC kernelwatch::core Boost::headers nlohmann_json::nlohmann_json Threads::Threads
  PRIVATE OpenSSL::Crypto)
