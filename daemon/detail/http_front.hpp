// The daemon's HTTP front (detail/daemon.hpp): the server (http/) on a thread of its own, and
// what that thread may read without the engine (Published). The server's thread accepts, parses
// and answers health checks and pre-rendered pages; every other handler runs on the engine's
// io_context (HttpServerOptions::handler_context). Private to daemon/.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "core/error.hpp"
#include "daemon/api.hpp"
#include "daemon/log.hpp"
#include "http/http_server.hpp"

namespace kernelwatch::daemon::detail {

// Answers already rendered stay current at most this long (ages and uptimes in them move).
inline constexpr std::chrono::milliseconds kRenderedMaxAge{1000};

class HttpFront {
 public:
  explicit HttpFront(std::string backend) : published_(std::move(backend), kRenderedMaxAge) {}
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Read by the HTTP thread, written by every part (thread-safe).
  [[nodiscard]] Published& published() { return published_; }
  // Binds the listener and starts accepting (on its thread, once run() starts it); requests are
  // logged at debug level.
  [[nodiscard]] core::Status listen(const http::HttpServerOptions& options,
                                    std::vector<Route> routes, std::string token, Log& log);
  [[nodiscard]] std::uint16_t port() const { return server_->port(); }
  void run();
  void set_token(std::string token) { server_->set_token(std::move(token)); }
  // The server belongs to its thread: its stop (closing the connections) is posted there.
  void stop();
  // Ends the thread: whatever it still serves is cut.
  void join();

 private:
  Published published_;
  // Declared before the engine's io_context (in Daemon) and destroyed after it, so that it
  // outlives what that io_context may still hold of a request (a handler queued when the daemon
  // stopped) when it is destroyed.
  boost::asio::io_context io_;
  std::thread thread_;
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace kernelwatch::daemon::detail
