// The only translation unit of the HTTP module that includes Beast (it is template-heavy): one
// coroutine per connection, a deadline on the stream before every read and write. Handlers run on
// the handler context when there is one; the I/O thread only parses, routes and writes.
#include "http/http_server.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <exception>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>
#include <nlohmann/json.hpp>

#include "http/connection_slots.hpp"
#include "http/http_parts.hpp"

namespace kernelwatch::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;
using namespace parts;

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
// After an answer that leaves request bytes unread, keep reading (and dropping) for a while so the
// client sees the answer instead of a reset.
constexpr std::chrono::milliseconds kMaxLinger{2000};
constexpr std::size_t kMaxLingerBytes = 8 * 1024 * 1024;
constexpr std::chrono::milliseconds kAcceptRetry{100};
// A spare connection's request header must arrive within this (or header_timeout if shorter).
constexpr std::chrono::milliseconds kSpareHeader{2000};

using Digest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

Digest sha256(std::string_view text) {
  Digest out{};
  unsigned int length = 0;
  const int ok = EVP_Digest(text.data(), text.size(), out.data(), &length, EVP_sha256(), nullptr);
  KW_ASSERT(ok == 1 && length == out.size(), "SHA-256 failed");
  return out;
}

std::string endpoint_text(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

struct CompiledRoute {
  Route route;
  std::vector<Segment> segments;
};

// An answer from the server itself (not a handler), and whether the connection must close after it.
struct Answer {
  HttpResponse response;
  bool close = false;
};

using Parser = http::request_parser<http::string_body>;

// What a step of serving a request leaves the connection to: the next step (or request), a
// graceful close after the answer it sent, or nothing (the client left, a timeout, stop()).
enum class Next { Proceed, Close, Drop };

// Who asked for what, for the answers' access log lines; "-" where it is not known yet.
struct RequestLine {
  const std::string& remote;
  std::string method;
  std::string path;
  Clock::time_point started;
};

}  // namespace

HttpResponse HttpResponse::json(unsigned status, const nlohmann::json& body) {
  HttpResponse out;
  out.status = status;
  // Replace invalid UTF-8 (a client's path echoed in an error) instead of throwing.
  out.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return out;
}

HttpResponse HttpResponse::error(unsigned status, std::string_view message) {
  return json(status, nlohmann::json{{"error", std::string(message)}});
}

HttpResponse HttpResponse::shared(unsigned status, std::shared_ptr<const std::string> body,
                                  std::string content_type) {
  HttpResponse out;
  out.status = status;
  out.shared_body = std::move(body);
  out.content_type = std::move(content_type);
  return out;
}

HttpResponse HttpResponse::text(unsigned status, std::string body, std::string content_type) {
  HttpResponse out;
  out.status = status;
  out.body = std::move(body);
  out.content_type = std::move(content_type);
  return out;
}

class HttpServer::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, HttpServerOptions options, std::vector<CompiledRoute> routes,
       AccessLog access_log)
      : options_(std::move(options)),
        routes_(std::move(routes)),
        access_log_(std::move(access_log)),
        acceptor_(io),
        retry_timer_(io),
        slots_({options_.max_connections, options_.max_connections_per_client,
                options_.spare_connections}) {}

  core::Status listen() {
    boost::system::error_code ec;
    const std::string host = options_.host == "localhost" ? "127.0.0.1" : options_.host;
    const auto address = asio::ip::make_address(host, ec);
    const std::string where = options_.host + ":" + std::to_string(options_.port);
    if (ec) {
      return core::fail(ErrorCode::InvalidArgument,
                        "cannot listen on " + where + ": the host must be an IP address");
    }
    const tcp::endpoint endpoint(address, options_.port);
    const auto refuse = [&](std::string_view step) {
      return core::fail(ErrorCode::IoError, "cannot listen on " + where + ": " + std::string(step) +
                                                ": " + ec.message());
    };
    acceptor_.open(endpoint.protocol(), ec);
    if (ec) return refuse("open");
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (ec) return refuse("SO_REUSEADDR");
    acceptor_.bind(endpoint, ec);
    if (ec) return refuse("bind");
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return refuse("listen");
    port_ = acceptor_.local_endpoint(ec).port();
    if (ec) return refuse("local address");
    return {};
  }

  std::uint16_t port() const { return port_; }

  void set_token(std::string token) {
    std::optional<Digest> digest;
    if (!token.empty()) digest = sha256(token);
    // Overwrite the caller's copy of the secret before it is freed.
    OPENSSL_cleanse(token.data(), token.size());
    std::lock_guard lock(token_mutex_);
    token_digest_ = digest;
  }

  void start() {
    if (started_ || stopped_) return;
    started_ = true;
    asio::co_spawn(acceptor_.get_executor(), accept_loop(shared_from_this()), asio::detached);
  }

  void stop() {
    if (stopped_) return;
    stopped_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_timer_.cancel();
    // close() never runs a handler inline, so the map stays intact while we walk it.
    for (auto& [id, connection] : live_) {
      if (connection.stream == nullptr || slots_.evicted(id)) continue;
      connection.stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      connection.stream->close();
    }
  }

 private:
  void log(std::string_view line) const {
    if (!access_log_) return;
    try {
      access_log_(line);
    } catch (...) {  // a failing log must not take the server down
    }
  }

  static asio::awaitable<void> accept_loop(std::shared_ptr<Impl> self) {
    while (!self->stopped_) {
      auto [ec, socket] = co_await self->acceptor_.async_accept(kUseTuple);
      if (self->stopped_ || ec == asio::error::operation_aborted) break;
      if (ec) {
        // Out of descriptors and the like: wait a little instead of spinning.
        self->log("accept failed: " + ec.message());
        self->retry_timer_.expires_after(kAcceptRetry);
        co_await self->retry_timer_.async_wait(kUseTuple);
        continue;
      }
      boost::system::error_code remote_ec;
      const auto remote = socket.remote_endpoint(remote_ec);
      if (remote_ec) continue;  // already gone
      std::string address = remote.address().to_string();
      const std::uint64_t id = self->next_id_++;
      self->live_.emplace(id, Live{nullptr, socket.native_handle()});
      if (!self->admit(id, address)) {
        self->live_.erase(id);
        boost::system::error_code ignored;
        self->log(
            "connection limits reached and no connection is waiting; closed the "
            "connection from " +
            endpoint_text(remote));
        socket.close(ignored);
        continue;
      }
      asio::co_spawn(self->acceptor_.get_executor(), session(self, std::move(socket), id),
                     asio::detached);
    }
  }

  // Makes room for connection `id` from `address` (ConnectionSlots): closes the connections it
  // replaces; false when it is refused.
  bool admit(std::uint64_t id, const std::string& address) {
    const auto admission =
        slots_.admit(id, address, [this](std::uint64_t other) { return has_request(other); });
    for (const auto victim : admission.evicted) close_evicted(victim);
    if (admission.slot == ConnectionSlots::Slot::Spare && ++spares_ % 100 == 1) {
      log("connection limit: every connection " + address +
          " may hold is busy; a spare connection answers only health checks and pre-rendered "
          "pages (" +
          std::to_string(spares_) + " so far)");
    }
    return admission.slot.has_value();
  }

  // Whether the connection's request has arrived unread: bytes wait in its socket.
  bool has_request(std::uint64_t id) const {
    const auto it = live_.find(id);
    if (it == live_.end()) return false;
    const int fd =
        it->second.stream != nullptr ? it->second.stream->socket().native_handle() : it->second.fd;
    int pending = 0;
    return fd >= 0 && ::ioctl(fd, FIONREAD, &pending) == 0 && pending > 0;
  }

  // A connection ends: its slot is free again.
  void unregister_connection(std::uint64_t id) {
    slots_.release(id);
    live_.erase(id);
  }

  void close_evicted(std::uint64_t id) {
    const auto evictions = slots_.evictions();
    // One line per 100 (a slowloris attack evicts thousands).
    if (evictions % 100 == 1) {
      log("connection limit: closed a connection that was waiting for a request header (" +
          std::to_string(evictions) + " so far)");
    }
    const auto it = live_.find(id);
    if (it == live_.end() || it->second.stream == nullptr) return;  // its session sees it
    boost::system::error_code ignored;
    it->second.stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    it->second.stream->close();
  }

  // Drops what the client still sends for a short while, then closes.
  static asio::awaitable<void> linger_close(Impl& self, beast::tcp_stream& stream) {
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.expires_after(std::min(self.options_.read_timeout, kMaxLinger));
    std::array<char, 16 * 1024> scratch{};
    std::size_t dropped = 0;
    while (!self.stopped_ && dropped < kMaxLingerBytes) {
      auto [ec, n] = co_await stream.async_read_some(asio::buffer(scratch), kUseTuple);
      if (ec) break;
      dropped += n;
    }
    stream.close();
  }

  static asio::awaitable<void> session(std::shared_ptr<Impl> self, tcp::socket socket,
                                       std::uint64_t id) {
    beast::tcp_stream stream(std::move(socket));
    struct Registration {
      Impl& impl;
      std::uint64_t id;
      ~Registration() { impl.unregister_connection(id); }
    } registration{*self, id};
    if (self->stopped_ || self->slots_.evicted(id)) co_return;
    self->live_.at(id) = Live{&stream, -1};
    boost::system::error_code ec;
    const std::string remote = endpoint_text(stream.socket().remote_endpoint(ec));
    try {
      const bool linger = co_await self->serve(stream, remote, id);
      if (linger && !self->stopped_) {
        co_await linger_close(*self, stream);
      } else {
        stream.close();
      }
    } catch (...) {
      self->log(remote + ": connection failed; closed");
      stream.close();
    }
  }

  // Serves requests until the connection should end. Returns true when the connection should be
  // closed gracefully (answer sent), false when it is already gone or timed out.
  asio::awaitable<bool> serve(beast::tcp_stream& stream, const std::string& remote,
                              std::uint64_t id) {
    beast::flat_buffer buffer;
    if (slots_.slot(id) == ConnectionSlots::Slot::Spare) {
      co_return co_await serve_spare(stream, buffer, remote, id) == Next::Close;
    }
    for (bool first = true; !stopped_; first = false) {
      slots_.set_waiting(id, true);
      if (!first && buffer.size() == 0) {
        const bool more = co_await await_request(stream, buffer);
        if (!more) co_return false;  // idle timeout, the client left, or stop()
      }
      const Next next = co_await serve_one(stream, buffer, remote, id);
      if (next != Next::Proceed) co_return next == Next::Close;
    }
    co_return false;
  }

  // Waits up to the idle timeout for the first bytes of the next request of a kept-alive
  // connection.
  asio::awaitable<bool> await_request(beast::tcp_stream& stream, beast::flat_buffer& buffer) {
    stream.expires_after(options_.idle_timeout);
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kUseTuple);
    if (ec) co_return false;
    buffer.commit(n);
    co_return true;
  }

  // One request: its header, the checks that may answer it before its body is read, its body,
  // its handler.
  asio::awaitable<Next> serve_one(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                  const std::string& remote, std::uint64_t id) {
    RequestLine line{remote, "-", "-", Clock::now()};
    Parser parser;
    parser.header_limit(
        static_cast<std::uint32_t>(std::min<std::size_t>(options_.max_header_bytes, UINT32_MAX)));
    parser.body_limit(boost::none);  // judged after routing and the token check
    const Next header_read = co_await read_header(stream, buffer, parser, line);
    if (header_read != Next::Proceed) co_return header_read;
    if (slots_.evicted(id)) co_return Next::Drop;
    slots_.set_waiting(id, false);

    const auto& header = parser.get();
    line.method = std::string(header.method_string());
    const auto target = parse_target(header.target());
    if (!target) {
      co_await respond(stream, line, false, HttpResponse::error(400, "malformed request target"));
      co_return Next::Close;
    }
    line.path = target->path;
    const bool head = line.method == "HEAD";
    const bool keep_alive = header.keep_alive();
    const CompiledRoute* route = nullptr;
    std::map<std::string, std::string> params;
    if (auto early = screen(line.method, *target, parser, route, params)) {
      const bool close = early->close || !parser.is_done() || !keep_alive;
      const bool sent = co_await respond(stream, line, !close, std::move(early->response), head);
      if (!sent) co_return Next::Drop;
      co_return close ? Next::Close : Next::Proceed;
    }
    if (!parser.is_done()) {
      const Next body_read = co_await read_body(stream, buffer, parser, line);
      if (body_read != Next::Proceed) co_return body_read;
    }
    stream.expires_never();

    HttpRequest request;
    request.method = line.method;
    request.path = target->path;
    request.query = target->query;
    request.params = std::move(params);
    request.body = std::move(parser.get().body());
    request.content_type = std::string(parser.get()[http::field::content_type]);
    request.remote = remote;
    HttpResponse response = co_await dispatch(*route, std::move(request), line);
    const bool keep = keep_alive && !stopped_;
    const bool sent = co_await respond(stream, line, keep, std::move(response), head);
    if (!sent) co_return Next::Drop;
    co_return keep ? Next::Proceed : Next::Close;
  }

  // A spare connection (ConnectionSlots): one request, answered only by a public route's quick
  // handler (health checks, pre-rendered pages), else 503; then the connection closes.
  asio::awaitable<Next> serve_spare(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                    const std::string& remote, std::uint64_t id) {
    RequestLine line{remote, "-", "-", Clock::now()};
    Parser parser;
    parser.header_limit(
        static_cast<std::uint32_t>(std::min<std::size_t>(options_.max_header_bytes, UINT32_MAX)));
    parser.body_limit(boost::none);
    const Next header_read = co_await read_header(stream, buffer, parser, line,
                                                  std::min(options_.header_timeout, kSpareHeader));
    if (header_read != Next::Proceed || slots_.evicted(id)) co_return Next::Drop;
    slots_.set_waiting(id, false);
    line.method = std::string(parser.get().method_string());
    const auto target = parse_target(parser.get().target());
    if (!target) {
      co_await respond(stream, line, false, HttpResponse::error(400, "malformed request target"));
      co_return Next::Close;
    }
    line.path = target->path;
    const CompiledRoute* route = nullptr;
    std::map<std::string, std::string> params;
    std::optional<Answer> early;
    find_route(line.method, *target, route, params, early);
    std::optional<HttpResponse> answer;
    if (early) {
      answer = std::move(early->response);
    } else if (route->route.access == Access::Public && route->route.quick) {
      HttpRequest request;
      request.method = line.method;
      request.path = target->path;
      request.query = target->query;
      request.params = std::move(params);
      request.remote = remote;
      try {
        answer = route->route.quick(request);
      } catch (...) {
        answer.reset();
      }
    }
    if (!answer) {
      answer = HttpResponse::error(
          503,
          "too many connections from this address are busy (http.max_connections_per_client "
          "is " +
              std::to_string(options_.max_connections_per_client) +
              "): this one answers only health checks; retry later");
      answer->headers.emplace_back("Retry-After", "1");
    }
    const bool sent =
        co_await respond(stream, line, false, std::move(*answer), line.method == "HEAD");
    co_return sent ? Next::Close : Next::Drop;
  }

  // The route's quick handler on this thread, else its handler on its own context or the
  // handler context (the engine's thread), this coroutine waiting without holding up the others.
  asio::awaitable<HttpResponse> dispatch(const CompiledRoute& route, HttpRequest request,
                                         const RequestLine& line) {
    if (route.route.quick) {
      try {
        if (auto answer = route.route.quick(request)) co_return std::move(*answer);
      } catch (...) {
        log(line.remote + " " + line.method + " " + printable(line.path) +
            ": the quick handler threw; asking the handler");
      }
    }
    asio::io_context* const context =
        route.route.context != nullptr ? route.route.context : options_.handler_context;
    if (context == nullptr) co_return handle(route, request, line);
    // The request and the route live in what the other thread runs: shared, not borrowed.
    auto shared = std::make_shared<const HttpRequest>(std::move(request));
    auto logged = std::make_shared<const std::string>(line.remote + " " + line.method + " " +
                                                      printable(line.path));
    // No lambda coroutine inside the co_await: GCC 12 destroys such a temporary's captures twice.
    auto pending = asio::co_spawn(context->get_executor(),
                                  run_handler(shared_from_this(), &route, shared, logged),
                                  asio::use_awaitable);
    HttpResponse response = co_await std::move(pending);
    co_return response;
  }

  // The handler context's side of dispatch(): everything it uses is owned by its frame.
  static asio::awaitable<HttpResponse> run_handler(std::shared_ptr<Impl> self,
                                                   const CompiledRoute* route,
                                                   std::shared_ptr<const HttpRequest> request,
                                                   std::shared_ptr<const std::string> who) {
    co_return self->handle(*route, *request, *who);
  }

  // Reads the request header; a header too large or malformed is answered and ends the
  // connection.
  asio::awaitable<Next> read_header(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                    Parser& parser, const RequestLine& line) {
    co_return co_await read_header(stream, buffer, parser, line, options_.header_timeout);
  }
  asio::awaitable<Next> read_header(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                    Parser& parser, const RequestLine& line,
                                    std::chrono::milliseconds deadline) {
    stream.expires_after(deadline);
    auto [ec, header_bytes] = co_await http::async_read_header(stream, buffer, parser, kUseTuple);
    if (!ec) co_return Next::Proceed;
    if (ec == http::error::header_limit) {
      co_await respond(stream, line, false, HttpResponse::error(431, "request header too large"));
      co_return Next::Close;
    }
    if (ec == beast::error::timeout) {
      log(line.remote + " - - no complete request header within " +
          std::to_string(deadline.count()) + " ms; connection closed");
      co_return Next::Drop;
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted || stopped_) {
      co_return Next::Drop;
    }
    co_await respond(stream, line, false,
                     HttpResponse::error(400, "malformed request: " + ec.message()));
    co_return Next::Close;
  }

  // Routing and what is answered before the body is read: no such endpoint or method, a
  // Transfer-Encoding other than chunked, a missing or wrong token, a body declared too large.
  std::optional<Answer> screen(const std::string& method, const Target& target,
                               const Parser& parser, const CompiledRoute*& route,
                               std::map<std::string, std::string>& params) const {
    std::optional<Answer> early;
    find_route(method, target, route, params, early);
    if (early) return early;
    const auto& header = parser.get();
    // A Transfer-Encoding other than exactly chunked is refused: another coding leaves the
    // body's end unknown (Beast would read the body as the next request: request smuggling
    // behind a proxy), and "gzip, chunked" would be stored still compressed.
    if (const auto te = header.equal_range(http::field::transfer_encoding); te.first != te.second) {
      const bool one = std::next(te.first) == te.second;
      if (!one || !iequals(trim(te.first->value()), "chunked") || !parser.chunked()) {
        return Answer{HttpResponse::error(400, "unsupported Transfer-Encoding (only chunked)"),
                      true};
      }
    }
    if (route->route.access == Access::TokenRequired) {
      if (auto refused = check_token(header[http::field::authorization])) return refused;
    }
    if (parser.content_length() && *parser.content_length() > options_.max_body_bytes) {
      return Answer{body_too_large(), true};
    }
    return std::nullopt;
  }

  // Reads the body, after a 100 Continue when the client waits for one; a body too large or
  // malformed is answered and ends the connection.
  asio::awaitable<Next> read_body(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                  Parser& parser, const RequestLine& line) {
    if (iequals(trim(parser.get()[http::field::expect]), "100-continue")) {
      http::response<http::empty_body> proceed{http::status::continue_, 11};
      stream.expires_after(options_.write_timeout);
      auto [wec, written] = co_await http::async_write(stream, proceed, kUseTuple);
      if (wec) co_return Next::Drop;
    }
    stream.expires_after(options_.read_timeout);
    parser.body_limit(options_.max_body_bytes);
    auto [ec, body_bytes] = co_await http::async_read(stream, buffer, parser, kUseTuple);
    if (!ec) co_return Next::Proceed;
    if (ec == http::error::body_limit) {
      co_await respond(stream, line, false, body_too_large());
      co_return Next::Close;
    }
    if (ec == beast::error::timeout) {
      log(line.remote + " " + line.method + " " + printable(line.path) +
          " timed out reading the request body; connection closed");
      co_return Next::Drop;
    }
    if (ec == http::error::partial_message || ec == asio::error::eof ||
        ec == asio::error::connection_reset || stopped_) {
      co_return Next::Drop;
    }
    co_await respond(stream, line, false,
                     HttpResponse::error(400, "malformed request body: " + ec.message()));
    co_return Next::Close;
  }

  HttpResponse body_too_large() const {
    return HttpResponse::error(
        413, "request body larger than " + std::to_string(options_.max_body_bytes) + " bytes");
  }

  // The route's handler. What it throws is answered 500 and logged by where it happened only:
  // the exception's text could quote a request or a secret.
  HttpResponse handle(const CompiledRoute& route, const HttpRequest& request,
                      const RequestLine& line) const {
    return handle(route, request, line.remote + " " + line.method + " " + printable(line.path));
  }
  HttpResponse handle(const CompiledRoute& route, const HttpRequest& request,
                      const std::string& who) const {
    try {
      return route.route.handler(request);
    } catch (...) {
      log(who + ": the handler threw; answered 500");
      return HttpResponse::error(500, "internal error");
    }
  }

  void find_route(const std::string& method, const Target& target, const CompiledRoute*& route,
                  std::map<std::string, std::string>& params, std::optional<Answer>& early) const {
    std::set<std::string> allowed;
    const CompiledRoute* get_route = nullptr;
    std::map<std::string, std::string> get_params;
    for (const auto& candidate : routes_) {
      auto matched = match(candidate.segments, target.segments);
      if (!matched) continue;
      allowed.insert(candidate.route.method);
      if (candidate.route.method == method && !route) {
        route = &candidate;
        params = std::move(*matched);
      } else if (candidate.route.method == "GET" && !get_route) {
        get_route = &candidate;
        get_params = std::move(*matched);
      }
    }
    if (route) return;
    if (method == "HEAD" && get_route) {  // HEAD is GET without the body
      route = get_route;
      params = std::move(get_params);
      return;
    }
    if (allowed.empty()) {
      early = Answer{HttpResponse::error(404, "no such endpoint: " + method + " " + target.path),
                     false};
      return;
    }
    if (allowed.count("GET")) allowed.insert("HEAD");
    std::string allow;
    for (const auto& name : allowed) allow += (allow.empty() ? "" : ", ") + name;
    auto response = HttpResponse::error(405, "method " + method + " not allowed on " + target.path);
    response.headers.emplace_back("Allow", allow);
    early = Answer{std::move(response), false};
  }

  std::optional<Answer> check_token(std::string_view authorization) const {
    std::optional<Digest> expected;
    {
      std::lock_guard lock(token_mutex_);
      expected = token_digest_;
    }
    if (!expected) return Answer{HttpResponse::error(403, "no token configured"), false};
    const auto presented = bearer_token(authorization);
    // Digests of equal length, compared in constant time: neither the token's length nor its
    // matching prefix shows in the timing.
    const Digest digest = sha256(presented ? *presented : std::string_view{});
    if (presented && CRYPTO_memcmp(digest.data(), expected->data(), digest.size()) == 0) {
      return std::nullopt;
    }
    auto response = HttpResponse::error(401, "missing or wrong bearer token");
    response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"kernelwatch\"");
    return Answer{std::move(response), false};
  }

  // The house headers and the answer's own on a response of any body type.
  template <class Response>
  static void prepare(Response& res, const HttpResponse& answer, bool keep_alive) {
    res.set(http::field::server, "kernelwatch");
    res.set(http::field::content_type, answer.content_type);
    res.set(http::field::cache_control, "no-store");
    for (const auto& [name, value] : answer.headers) {
      if (name.empty() || has_line_break(name) || has_line_break(value)) continue;
      res.set(name, value);
    }
    res.keep_alive(keep_alive);
  }

  // Writes one answer and logs it; false when the connection failed.
  asio::awaitable<bool> respond(beast::tcp_stream& stream, const RequestLine& line, bool keep_alive,
                                HttpResponse answer, bool head = false) {
    boost::system::error_code ec;
    if (answer.shared_body) {
      // The cache's bytes as they are (they outlive the write: `answer` holds them).
      http::response<http::span_body<const char>> res{static_cast<http::status>(answer.status), 11};
      prepare(res, answer, keep_alive);
      res.body() = {answer.shared_body->data(), answer.shared_body->size()};
      res.prepare_payload();
      if (head) res.body() = {};  // Content-Length still tells the GET size
      stream.expires_after(options_.write_timeout);
      std::tie(ec, std::ignore) = co_await http::async_write(stream, res, kUseTuple);
    } else {
      http::response<http::string_body> res{static_cast<http::status>(answer.status), 11};
      prepare(res, answer, keep_alive);
      res.body() = std::move(answer.body);
      res.prepare_payload();
      if (head) res.body().clear();  // Content-Length still tells the GET size
      stream.expires_after(options_.write_timeout);
      std::tie(ec, std::ignore) = co_await http::async_write(stream, res, kUseTuple);
    }
    const auto elapsed = std::chrono::duration<double, std::milli>(Clock::now() - line.started);
    char duration[32];
    std::snprintf(duration, sizeof duration, "%.3fms", elapsed.count());
    log(line.remote + " " + printable(line.method) + " " + printable(line.path) + " " +
        std::to_string(answer.status) + " " + duration + (ec ? " (write failed)" : ""));
    co_return !ec;
  }

  HttpServerOptions options_;
  std::vector<CompiledRoute> routes_;
  AccessLog access_log_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  std::uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  ConnectionSlots slots_;
  // The stream of each connection (null until its session starts; its socket's descriptor
  // before), to close it when it is replaced and to see whether its request has arrived.
  struct Live {
    beast::tcp_stream* stream = nullptr;
    int fd = -1;
  };
  std::unordered_map<std::uint64_t, Live> live_;
  std::uint64_t next_id_ = 0;
  std::uint64_t spares_ = 0;
  mutable std::mutex token_mutex_;
  std::optional<Digest> token_digest_;
};

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  if (impl_) impl_->stop();
}

core::Result<std::unique_ptr<HttpServer>> HttpServer::create(asio::io_context& io,
                                                             HttpServerOptions options,
                                                             std::vector<Route> routes,
                                                             std::string token,
                                                             AccessLog access_log) {
  using std::chrono::milliseconds;
  if (options.max_connections == 0 || options.max_connections_per_client == 0 ||
      options.spare_connections == 0 || options.max_header_bytes == 0 ||
      options.header_timeout <= milliseconds::zero() ||
      options.read_timeout <= milliseconds::zero() ||
      options.write_timeout <= milliseconds::zero() ||
      options.idle_timeout <= milliseconds::zero()) {
    return core::fail(ErrorCode::InvalidArgument,
                      "HTTP server: connection limit, header limit and timeouts must be positive");
  }
  std::vector<CompiledRoute> compiled;
  std::set<std::pair<std::string, std::string>> seen;
  for (auto& route : routes) {
    if (!valid_method(route.method)) {
      return core::fail(ErrorCode::InvalidArgument, "route `" + route.pattern + "`: method `" +
                                                        route.method +
                                                        "` must be an upper-case HTTP method");
    }
    if (!route.handler) {
      return core::fail(ErrorCode::InvalidArgument,
                        "route " + route.method + " " + route.pattern + " has no handler");
    }
    auto segments = KW_TRY(compile_pattern(route.pattern));
    if (!seen.emplace(route.method, route.pattern).second) {
      return core::fail(ErrorCode::InvalidArgument,
                        "route " + route.method + " " + route.pattern + " is defined twice");
    }
    compiled.push_back(CompiledRoute{std::move(route), std::move(segments)});
  }
  auto impl =
      std::make_shared<Impl>(io, std::move(options), std::move(compiled), std::move(access_log));
  KW_TRY(impl->listen());
  impl->set_token(std::move(token));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::uint16_t HttpServer::port() const {
  return impl_->port();
}
void HttpServer::start() {
  impl_->start();
}
void HttpServer::stop() {
  impl_->stop();
}
void HttpServer::set_token(std::string token) {
  impl_->set_token(std::move(token));
}

}  // namespace kernelwatch::http
