// The daemon's HTTP/1.1 server: routes with path parameters, bearer-token access for mutating
// endpoints, size limits and timeouts, JSON errors. Beast lives only in http_server.cpp; this
// header names Asio only through a forward-declared io_context.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"

namespace boost::asio {
class io_context;
}

namespace kernelwatch::daemon {

struct HttpRequest {
  std::string method;                         // "GET"
  std::string path;                           // target without the query, percent-decoded
  std::map<std::string, std::string> query;   // decoded ?a=b&c=d; a repeated name keeps the last
  std::map<std::string, std::string> params;  // from the route pattern, e.g. {id}
  std::string body;
  std::string content_type;
  std::string remote;  // "127.0.0.1:53412"
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers

  [[nodiscard]] static HttpResponse json(unsigned status, const nlohmann::json& body);
  [[nodiscard]] static HttpResponse error(unsigned status, std::string_view message);
  [[nodiscard]] static HttpResponse text(unsigned status, std::string body,
                                         std::string content_type);
};

enum class Access { Public, TokenRequired };

// Runs on the io_context thread and must be quick; an exception becomes a 500.
using Handler = std::function<HttpResponse(const HttpRequest&)>;

// `pattern` is an absolute path whose segments are literals or `{name}` parameters, e.g.
// "/api/v1/alerts/{id}/ack". A parameter matches one non-empty segment.
struct Route {
  std::string method;
  std::string pattern;
  Access access = Access::Public;
  Handler handler;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address (or "localhost")
  std::uint16_t port = 9477;       // 0 = an ephemeral port (tests)
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 1024 * 1024;
  std::chrono::milliseconds read_timeout{10000};  // one whole request, header and body
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds idle_timeout{30000};  // a kept-alive connection between requests
  std::size_t max_connections = 256;
};

// One line per answered request: remote, method, path, status, duration. Never headers, bodies,
// query strings or tokens. Also receives one-line notices (connection limit, handler failure).
using AccessLog = std::function<void(std::string_view line)>;

// Lifetime: create() binds and listens; start() begins accepting on the io_context; stop() closes
// the acceptor and every connection so that io_context::run() returns once nothing is left.
// stop() and the destructor must run on the io_context's thread or while no thread runs it.
class HttpServer {
 public:
  // Fails with InvalidArgument on bad options or routes, IoError when the address cannot be
  // bound (the message names host:port and the system's reason, e.g. address already in use).
  [[nodiscard]] static core::Result<std::unique_ptr<HttpServer>> create(boost::asio::io_context& io,
                                                                        HttpServerOptions options,
                                                                        std::vector<Route> routes,
                                                                        std::string token,
                                                                        AccessLog access_log = {});

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();

  [[nodiscard]] std::uint16_t port() const;  // the bound port
  void start();
  void stop();
  // Replaces the bearer token (SIGHUP reload); thread-safe. An empty token makes every
  // TokenRequired route answer 403 "no token configured". Only a digest of it is kept.
  void set_token(std::string token);

  class Impl;

 private:
  explicit HttpServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared with running connections so they can outlive stop()
};

}  // namespace kernelwatch::daemon
