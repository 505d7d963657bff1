// kernelwatch's HTTP/1.1 server (the daemon listens with it): routes with path parameters,
// bearer-token access for mutating endpoints, size limits and timeouts, JSON errors. Beast lives
// only in http_server.cpp; this header names Asio only through a forward-declared io_context.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"

namespace boost::asio {
class io_context;
}

namespace kernelwatch::http {

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
  // A body kept by a cache (a pre-rendered page of megabytes), sent from there without a copy;
  // when set, `body` is not sent.
  std::shared_ptr<const std::string> shared_body;

  [[nodiscard]] static HttpResponse json(unsigned status, const nlohmann::json& body);
  [[nodiscard]] static HttpResponse error(unsigned status, std::string_view message);
  [[nodiscard]] static HttpResponse text(unsigned status, std::string body,
                                         std::string content_type);
  [[nodiscard]] static HttpResponse shared(unsigned status, std::shared_ptr<const std::string> body,
                                           std::string content_type);
};

enum class Access { Public, TokenRequired };

// Runs on the server's handler context (HttpServerOptions::handler_context; the I/O thread when
// there is none); an exception becomes a 500.
using Handler = std::function<HttpResponse(const HttpRequest&)>;
// Runs on the I/O thread before `handler` and must be quick and thread-safe (atomics, a cache
// behind a mutex): an answer here never waits for the handler context. nullopt: ask the handler.
using QuickHandler = std::function<std::optional<HttpResponse>(const HttpRequest&)>;

// `pattern` is an absolute path whose segments are literals or `{name}` parameters, e.g.
// "/api/v1/alerts/{id}/ack". A parameter matches one non-empty segment.
struct Route {
  std::string method;
  std::string pattern;
  Access access = Access::Public;
  Handler handler;
  QuickHandler quick = {};  // optional: health checks, pre-rendered pages
  // Where `handler` runs when not the server's handler_context (the dashboard's key and alert
  // pages render on a thread of their own, never holding up the engine's).
  boost::asio::io_context* context = nullptr;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address (or "localhost")
  std::uint16_t port = 9477;       // 0 = an ephemeral port (tests)
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 1024 * 1024;
  // A complete request header, counted from the accept (a new connection) or from the first
  // byte of the next request (a kept-alive one): a slowloris client is closed after it.
  std::chrono::milliseconds header_timeout{5000};
  std::chrono::milliseconds read_timeout{10000};  // the body, after its header
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds idle_timeout{30000};  // a kept-alive connection between requests
  std::size_t max_connections = 256;
  // Connections from one client address. When it (or max_connections) is reached, the new
  // connection replaces the one that has waited longest for a request header (a slowloris
  // connection or an idle kept-alive one); only when none is waiting is it refused.
  std::size_t max_connections_per_client = 128;
  // When every connection a client may hold is busy with a request, its new connection takes one
  // of these (at most this many in all): one request with a header deadline of at most 2 s,
  // answered only by a quick handler (health checks, pre-rendered pages) and otherwise 503, then
  // closed.
  std::size_t spare_connections = 32;
  // Where handlers run (the daemon's engine thread), so that slow work never holds up the thread
  // that accepts and answers. Null: on the I/O thread itself.
  boost::asio::io_context* handler_context = nullptr;
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

}  // namespace kernelwatch::http
