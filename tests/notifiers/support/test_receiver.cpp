#include "tests/notifiers/support/test_receiver.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

namespace kernelwatch::notifiers::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);

std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

struct TestReceiver::Impl {
  std::optional<ssl::context> tls;  // declared before io: coroutine frames die with io first
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  std::uint16_t port = 0;

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  Snapshot state;
  std::size_t ok_count = 0;
  Script script;
  bool record_requests = true;
  std::size_t total_requests = 0;

  void notify() { changed.notify_all(); }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kUseTuple);
      if (ec) co_return;
      {
        std::lock_guard lock(mutex);
        ++state.connections;
      }
      notify();
      if (tls) {
        asio::co_spawn(io, serve_tls(std::move(socket)), asio::detached);
      } else {
        asio::co_spawn(io, serve_plain(std::move(socket)), asio::detached);
      }
    }
  }

  asio::awaitable<void> serve_plain(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    co_await serve(stream);
  }

  asio::awaitable<void> serve_tls(tcp::socket socket) {
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
    auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, kUseTuple);
    if (ec) {
      {
        std::lock_guard lock(mutex);
        ++state.tls_failures;
      }
      notify();
      co_return;
    }
    co_await serve(stream);
  }

  template <class Stream>
  asio::awaitable<void> serve(Stream& stream) {
    beast::flat_buffer buffer;
    for (;;) {
      beast::get_lowest_layer(stream).expires_never();
      http::request<http::string_body> req;
      auto [ec, bytes] = co_await http::async_read(stream, buffer, req, kUseTuple);
      if (ec) co_return;
      RecordedRequest record;
      record.method = std::string(req.method_string());
      record.target = std::string(req.target());
      for (const auto& field : req) {
        record.headers[lower(std::string(field.name_string()))] = std::string(field.value());
      }
      record.body = req.body();
      record.received_at = std::chrono::steady_clock::now();
      std::size_t index = 0;
      Script current;
      {
        std::lock_guard lock(mutex);
        index = total_requests++;
        current = script;
        if (record_requests) state.requests.push_back(record);
      }
      notify();
      const Action action = current ? current(index, record) : Action::respond(200);

      if (action.kind == Action::Kind::Hang) {
        http::request<http::string_body> next;  // returns once the client gives up
        (void)co_await http::async_read(stream, buffer, next, kUseTuple);
        {
          std::lock_guard lock(mutex);
          ++state.hung;
        }
        notify();
        co_return;
      }
      if (action.kind == Action::Kind::CloseMidResponse) {
        const std::string partial =
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\npartial";
        (void)co_await asio::async_write(stream, asio::buffer(partial), kUseTuple);
        beast::error_code ignored;
        beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
        beast::get_lowest_layer(stream).close();
        co_return;
      }
      http::response<http::string_body> res{static_cast<http::status>(action.status), 11};
      res.set(http::field::content_type, "text/plain");
      for (const auto& [name, value] : action.headers) res.set(name, value);
      res.body() = action.body;
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      auto [wec, written] = co_await http::async_write(stream, res, kUseTuple);
      if (wec) co_return;
      {
        std::lock_guard lock(mutex);
        if (record_requests && index < state.requests.size()) {
          state.requests[index].answered_status = action.status;
        }
        if (action.status >= 200 && action.status < 300) ++ok_count;
      }
      notify();
      if (!res.keep_alive()) co_return;
    }
  }
};

TestReceiver::TestReceiver(std::optional<ServerIdentity> identity)
    : impl_(std::make_unique<Impl>()) {
  if (identity) {
    impl_->tls.emplace(ssl::context::tls_server);
    impl_->tls->use_certificate_chain(asio::buffer(identity->cert_pem));
    impl_->tls->use_private_key(asio::buffer(identity->key_pem), ssl::context::pem);
  }
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  impl_->port = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

TestReceiver::~TestReceiver() {
  impl_->io.stop();
  impl_->thread.join();
}

std::uint16_t TestReceiver::port() const {
  return impl_->port;
}

std::string TestReceiver::url(const std::string& path) const {
  return std::string(impl_->tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port()) +
         path;
}

void TestReceiver::set_script(Script script) {
  std::lock_guard lock(impl_->mutex);
  impl_->script = std::move(script);
}

void TestReceiver::set_recording(Recording recording) {
  std::lock_guard lock(impl_->mutex);
  impl_->record_requests = recording == Recording::Full;
}

TestReceiver::Snapshot TestReceiver::snapshot() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->state;
}

bool TestReceiver::wait_for(const std::function<bool(const Snapshot&)>& done,
                            std::chrono::milliseconds deadline) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->changed.wait_for(lock, deadline, [&] { return done(impl_->state); });
}

bool TestReceiver::wait_for_requests(std::size_t count, std::chrono::milliseconds deadline) const {
  return wait_for([count](const Snapshot& s) { return s.requests.size() >= count; }, deadline);
}

std::size_t TestReceiver::answered_2xx() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->ok_count;
}

bool TestReceiver::wait_for_2xx(std::size_t count, std::chrono::milliseconds deadline) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->changed.wait_for(lock, deadline, [&] { return impl_->ok_count >= count; });
}

Script fail_then_succeed(std::size_t failures, unsigned failure_status) {
  return [failures, failure_status](std::size_t index, const RecordedRequest&) {
    return index < failures ? Action::respond(failure_status, "try again")
                            : Action::respond(200, "ok");
  };
}

std::string slack_limit_violations(const std::string& body) {
  const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return "not a JSON object";
  if (!doc.contains("text") || !doc["text"].is_string() || doc["text"].get<std::string>().empty()) {
    return "no top-level text fallback";
  }
  std::size_t blocks = 0;
  std::string problems;
  auto check_blocks = [&](const nlohmann::json& list) {
    if (!list.is_array()) return;
    for (const auto& block : list) {
      ++blocks;
      const std::string type = block.value("type", "");
      if (type == "section" && block.contains("text")) {
        const auto text = block["text"].value("text", "");
        if (text.size() > 3000) problems += "section text over 3000 characters; ";
      }
      if (type == "header" && block["text"].value("text", "").size() > 150) {
        problems += "header over 150 characters; ";
      }
      if (type == "context" && block.contains("elements")) {
        for (const auto& element : block["elements"]) {
          if (element.value("text", "").size() > 3000) problems += "context over 3000; ";
        }
      }
    }
  };
  if (doc.contains("blocks")) check_blocks(doc["blocks"]);
  if (doc.contains("attachments")) {
    for (const auto& attachment : doc["attachments"]) {
      if (attachment.contains("blocks")) check_blocks(attachment["blocks"]);
    }
  }
  if (blocks > 50) problems += std::to_string(blocks) + " blocks (limit 50); ";
  return problems;
}

}  // namespace kernelwatch::notifiers::testing
