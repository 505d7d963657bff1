// The daemon's HTTP front (detail/http_front.hpp): the server on its own thread.
#include "daemon/detail/http_front.hpp"

#include <boost/asio/post.hpp>

namespace kernelwatch::daemon::detail {

core::Status HttpFront::listen(const http::HttpServerOptions& options, std::vector<Route> routes,
                               std::string token, Log& log) {
  server_ = KW_TRY(http::HttpServer::create(
      io_, options, std::move(routes), std::move(token),
      [&log](std::string_view line) { log.write(LogLevel::Debug, line); }));
  server_->start();
  return {};
}

void HttpFront::run() {
  thread_ = std::thread([this] { io_.run(); });
}

void HttpFront::stop() {
  if (server_) boost::asio::post(io_, [this] { server_->stop(); });
}

void HttpFront::join() {
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kernelwatch::daemon::detail
