// One destination's HTTP/1.1 client: Beast over Asio and OpenSSL, certificate verification
// against the system store or a CA file, SNI and host-name checks, a timeout before every step,
// keep-alive. Beast and OpenSSL stay in http_client.cpp; this header only names Asio types.
#pragma once

#include <memory>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "core/error.hpp"
#include "notifiers/destination.hpp"
#include "notifiers/payloads.hpp"
#include "notifiers/retry.hpp"

namespace kernelwatch::notifiers {

// Why a request produced no HTTP response. Every kind is retried by the worker.
enum class TransportStep { Resolve, Connect, Handshake, Write, Read };

class HttpClient {
 public:
  // Parses and checks the URL (http:// only for loopback or when allowed) and loads the CA file
  // or the system store. Errors name the destination and the redacted URL only.
  [[nodiscard]] static core::Result<std::unique_ptr<HttpClient>> create(
      boost::asio::any_io_executor executor, const Destination& destination);

  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  ~HttpClient();

  // POSTs to the destination's URL. A non-2xx status is a response, not an error; errors are
  // transport failures ("https://host:443: TLS handshake: certificate verify failed") with
  // ErrorCode::Unavailable. Reuses the connection when the server keeps it alive. One call at a
  // time per client.
  [[nodiscard]] boost::asio::awaitable<core::Result<HttpResponse>> post(OutgoingRequest request);

  // Cancels what is in flight (it completes with an error) and drops the connection.
  void close();

 private:
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernelwatch::notifiers
