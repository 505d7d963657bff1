// The only translation unit of kw_notifiers that includes Beast (it is template-heavy).
#include "notifiers/http_client.hpp"

#include <openssl/ssl.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace kernelwatch::notifiers {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using core::ErrorCode;

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::uint64_t kResponseBodyLimit = 1 << 20;

std::string_view step_name(TransportStep step) {
  switch (step) {
    case TransportStep::Resolve:
      return "resolve";
    case TransportStep::Connect:
      return "connect";
    case TransportStep::Handshake:
      return "TLS handshake";
    case TransportStep::Write:
      return "write";
    case TransportStep::Read:
      return "read";
  }
  return "request";
}

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

struct HttpClient::Impl {
  Impl(asio::any_io_executor ex, Destination d, core::Url u)
      : executor(std::move(ex)),
        destination(std::move(d)),
        url(std::move(u)),
        origin(redact(destination.url)),
        resolver(executor),
        resolve_timer(executor) {}

  asio::any_io_executor executor;
  Destination destination;
  core::Url url;
  std::string origin;  // scheme://host:port, the only form of the URL that reaches an error
  std::unique_ptr<ssl::context> tls_context;
  tcp::resolver resolver;
  asio::steady_timer resolve_timer;
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  bool connected = false;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  core::Error failure(TransportStep step, const beast::error_code& ec,
                      std::chrono::milliseconds timeout) const {
    std::string what = ec == beast::error::timeout || ec == asio::error::timed_out
                           ? "timed out after " + std::to_string(timeout.count()) + " ms"
                           : ec.message();
    return core::Error{ErrorCode::Unavailable,
                       origin + ": " + std::string(step_name(step)) + " failed: " + what};
  }

  void drop() {
    connected = false;
    buffer.clear();
    tls.reset();
    plain.reset();
  }

  std::string host_header() const {
    const bool ipv6 = url.host.find(':') != std::string::npos;
    std::string out = ipv6 ? "[" + url.host + "]" : url.host;
    const std::uint16_t default_port = url.scheme == "https" ? 443 : 80;
    if (url.port != default_port) out += ":" + std::to_string(url.port);
    return out;
  }

  asio::awaitable<core::Status> connect() {
    drop();
    const auto& t = destination.timeouts;
    auto resolve_timed_out = std::make_shared<bool>(false);
    resolve_timer.expires_after(t.resolve);
    resolve_timer.async_wait([this, resolve_timed_out](const boost::system::error_code& ec) {
      if (!ec) {
        *resolve_timed_out = true;
        resolver.cancel();
      }
    });
    auto [rec, endpoints] =
        co_await resolver.async_resolve(url.host, std::to_string(url.port), kUseTuple);
    resolve_timer.cancel();
    if (*resolve_timed_out) {
      co_return tl::unexpected(failure(TransportStep::Resolve, beast::error::timeout, t.resolve));
    }
    if (rec) co_return tl::unexpected(failure(TransportStep::Resolve, rec, t.resolve));

    if (tls_context) {
      tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(executor, *tls_context);
    } else {
      plain = std::make_unique<beast::tcp_stream>(executor);
    }
    lowest().expires_after(t.connect);
    auto [cec, endpoint] = co_await lowest().async_connect(endpoints, kUseTuple);
    if (cec) {
      auto error = failure(TransportStep::Connect, cec, t.connect);
      drop();
      co_return tl::unexpected(std::move(error));
    }
    if (tls) {
      // SNI carries host names only (RFC 6066); the certificate check covers IP literals too.
      if (!is_ip_literal(url.host) &&
          SSL_set_tlsext_host_name(tls->native_handle(), url.host.c_str()) != 1) {
        drop();
        co_return tl::unexpected(
            core::Error{ErrorCode::Internal, origin + ": cannot set the TLS server name"});
      }
      tls->set_verify_mode(ssl::verify_peer);
      tls->set_verify_callback(ssl::host_name_verification(url.host));
      lowest().expires_after(t.handshake);
      auto [hec] = co_await tls->async_handshake(ssl::stream_base::client, kUseTuple);
      if (hec) {
        auto error = failure(TransportStep::Handshake, hec, t.handshake);
        drop();
        co_return tl::unexpected(std::move(error));
      }
    }
    connected = true;
    co_return core::Status{};
  }

  struct Exchange {
    core::Result<HttpResponse> result = core::fail(ErrorCode::Internal, "no exchange");
    bool stale = false;  // the kept-alive connection was gone before any response byte
  };

  template <class Stream>
  asio::awaitable<Exchange> exchange(Stream& stream, const OutgoingRequest& request) {
    const auto& t = destination.timeouts;
    http::request<http::string_body> req{http::verb::post, url.target, 11};
    req.set(http::field::host, host_header());
    for (const auto& [name, value] : request.headers) req.set(name, value);
    req.body() = request.body;
    req.keep_alive(true);
    req.prepare_payload();

    lowest().expires_after(t.write);
    auto [wec, written] = co_await http::async_write(stream, req, kUseTuple);
    if (wec) {
      co_return Exchange{tl::unexpected(failure(TransportStep::Write, wec, t.write)), true};
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(kResponseBodyLimit);
    lowest().expires_after(t.read);
    auto [rec, read] = co_await http::async_read(stream, buffer, parser, kUseTuple);
    if (rec) {
      const bool stale =
          !parser.got_some() && (rec == http::error::end_of_stream || rec == asio::error::eof ||
                                 rec == asio::error::connection_reset);
      co_return Exchange{tl::unexpected(failure(TransportStep::Read, rec, t.read)), stale};
    }
    lowest().expires_never();
    auto& res = parser.get();
    HttpResponse out;
    out.status = res.result_int();
    out.retry_after = std::string(res[http::field::retry_after]);
    out.body = std::move(res.body());
    if (!res.keep_alive()) drop();
    co_return Exchange{std::move(out), false};
  }
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

core::Result<std::unique_ptr<HttpClient>> HttpClient::create(asio::any_io_executor executor,
                                                             const Destination& destination) {
  KW_TRY(validate(destination));
  const core::Url url =
      integration_of(destination).endpoint(KW_TRY(core::parse_url(destination.url)));
  auto impl = std::make_unique<Impl>(std::move(executor), destination, url);
  if (url.scheme == "https") {
    auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
    boost::system::error_code ec;
    if (!destination.ca_file.empty()) {
      context->load_verify_file(destination.ca_file, ec);
    } else {
      context->set_default_verify_paths(ec);
    }
    if (ec) {
      return core::fail(ErrorCode::NotFound,
                        "destination `" + destination.name + "`: cannot load CA certificates" +
                            (destination.ca_file.empty() ? std::string(" from the system store")
                                                         : " from " + destination.ca_file) +
                            ": " + ec.message());
    }
    context->set_verify_mode(ssl::verify_peer);
    impl->tls_context = std::move(context);
  }
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

asio::awaitable<core::Result<HttpResponse>> HttpClient::post(OutgoingRequest request) {
  Impl& impl = *impl_;
  bool reused = impl.connected;
  while (true) {
    if (!impl.connected) {
      if (auto ok = co_await impl.connect(); !ok) co_return tl::unexpected(ok.error());
    }
    // Two statements, not a conditional expression: g++ 12 mishandles co_await inside ?:.
    Impl::Exchange exchange;
    if (impl.tls) {
      exchange = co_await impl.exchange(*impl.tls, request);
    } else {
      exchange = co_await impl.exchange(*impl.plain, request);
    }
    if (exchange.result) co_return std::move(exchange.result);
    impl.drop();
    // A kept-alive connection the server had closed: try once more on a fresh one.
    if (!(reused && exchange.stale)) co_return std::move(exchange.result);
    reused = false;
  }
}

void HttpClient::close() {
  Impl& impl = *impl_;
  impl.resolver.cancel();
  impl.resolve_timer.cancel();
  if (impl.tls || impl.plain) {
    boost::system::error_code ignored;
    impl.lowest().socket().close(ignored);
  }
  impl.connected = false;
}

}  // namespace kernelwatch::notifiers
