#include "notifiers/http_client.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "tests/notifiers/support/test_pki.hpp"
#include "tests/notifiers/support/test_receiver.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::notifiers {
namespace {

namespace asio = boost::asio;
using testing::Action;
using testing::TestReceiver;

const testing::TestPki& pki() {
  static const testing::TestPki instance = testing::make_test_pki();
  return instance;
}

Destination destination(const std::string& url,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(500)) {
  Destination d;
  d.name = "hook";
  d.url = url;
  d.timeouts = {timeout, timeout, timeout, timeout, timeout};
  return d;
}

OutgoingRequest request(const std::string& body = "{\"x\":1}") {
  return OutgoingRequest{body, {{"Content-Type", "application/json"}, {"Idempotency-Key", "k1"}}};
}

// Runs one post to completion on a fresh io_context.
core::Result<HttpResponse> post(HttpClient& client, asio::io_context& io,
                                OutgoingRequest r = request()) {
  std::optional<core::Result<HttpResponse>> result;
  asio::co_spawn(io, client.post(std::move(r)),
                 [&](std::exception_ptr error, core::Result<HttpResponse> value) {
                   if (error) std::rethrow_exception(error);
                   result = std::move(value);
                 });
  io.restart();
  io.run();
  EXPECT_TRUE(result.has_value());
  if (!result) return core::fail(core::ErrorCode::Internal, "did not finish");
  return std::move(*result);
}

std::unique_ptr<HttpClient> make_client(asio::io_context& io, const Destination& d) {
  auto client = HttpClient::create(io.get_executor(), d);
  EXPECT_TRUE(client) << client.error().message;
  return client ? std::move(*client) : nullptr;
}

TEST(HttpClient, PostsOverPlainHttpToLoopbackAndReusesTheConnection) {
  TestReceiver receiver;
  asio::io_context io;
  auto client = make_client(io, destination(receiver.url("/hook?token=abc")));
  auto first = post(*client, io);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->status, 200u);
  EXPECT_EQ(first->body, "ok");
  ASSERT_TRUE(post(*client, io));
  const auto seen = receiver.snapshot();
  ASSERT_EQ(seen.requests.size(), 2u);
  EXPECT_EQ(seen.requests[0].method, "POST");
  EXPECT_EQ(seen.requests[0].target, "/hook?token=abc");
  EXPECT_EQ(seen.requests[0].header("idempotency-key"), "k1");
  EXPECT_EQ(seen.requests[0].header("host"), "127.0.0.1:" + std::to_string(receiver.port()));
  EXPECT_EQ(seen.requests[0].body, "{\"x\":1}");
  EXPECT_EQ(seen.connections, 1u);
}

TEST(HttpClient, ReturnsErrorStatusesAndRetryAfterAsResponses) {
  TestReceiver receiver;
  receiver.set_script([](std::size_t, const testing::RecordedRequest&) {
    Action a = Action::respond(429, "slow down");
    a.headers.emplace_back("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT");
    return a;
  });
  asio::io_context io;
  auto client = make_client(io, destination(receiver.url()));
  auto response = post(*client, io);
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->status, 429u);
  EXPECT_EQ(response->retry_after, "Wed, 21 Oct 2015 07:28:00 GMT");
}

TEST(HttpClient, VerifiesTheServerAgainstTheConfiguredCa) {
  kernelwatch::testing::TempDir dir;
  testing::write_text(dir / "ca.pem", pki().ca_pem);
  TestReceiver receiver(testing::ServerIdentity{pki().server.cert_pem, pki().server.key_pem});
  asio::io_context io;
  auto d = destination(receiver.url("/secure"));
  d.ca_file = (dir / "ca.pem").string();
  auto client = make_client(io, d);
  auto response = post(*client, io);
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->status, 200u);
  EXPECT_EQ(receiver.snapshot().requests.at(0).target, "/secure");
  // localhost is in the certificate too.
  auto by_name = destination("https://localhost:" + std::to_string(receiver.port()) + "/n");
  by_name.ca_file = d.ca_file;
  auto named = make_client(io, by_name);
  EXPECT_TRUE(post(*named, io));
}

TEST(HttpClient, RefusesACertificateForAnotherHostAndSendsNothing) {
  kernelwatch::testing::TempDir dir;
  testing::write_text(dir / "ca.pem", pki().ca_pem);
  TestReceiver receiver(testing::ServerIdentity{pki().other.cert_pem, pki().other.key_pem});
  asio::io_context io;
  auto d = destination(receiver.url("/secret-path?token=abc"));
  d.ca_file = (dir / "ca.pem").string();
  auto client = make_client(io, d);
  auto response = post(*client, io);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, core::ErrorCode::Unavailable);
  EXPECT_NE(response.error().message.find("TLS handshake failed"), std::string::npos)
      << response.error().message;
  EXPECT_EQ(response.error().message.find("secret"), std::string::npos);
  ASSERT_TRUE(receiver.wait_for([](const auto& s) { return s.tls_failures >= 1; }));
  EXPECT_TRUE(receiver.snapshot().requests.empty());
}

TEST(HttpClient, RefusesAServerTheSystemStoreDoesNotTrust) {
  TestReceiver receiver(testing::ServerIdentity{pki().server.cert_pem, pki().server.key_pem});
  asio::io_context io;
  auto client = make_client(io, destination(receiver.url()));
  auto response = post(*client, io);
  ASSERT_FALSE(response);
  EXPECT_NE(response.error().message.find("certificate verify failed"), std::string::npos)
      << response.error().message;
  ASSERT_TRUE(receiver.wait_for([](const auto& s) { return s.tls_failures >= 1; }));
  EXPECT_TRUE(receiver.snapshot().requests.empty());
}

TEST(HttpClient, TimesOutOnAServerThatNeverAnswers) {
  TestReceiver receiver;
  receiver.set_script([](std::size_t, const auto&) { return Action::hang(); });
  asio::io_context io;
  auto client = make_client(io, destination(receiver.url(), std::chrono::milliseconds(200)));
  auto response = post(*client, io);
  ASSERT_FALSE(response);
  EXPECT_NE(response.error().message.find("read failed: timed out after 200 ms"), std::string::npos)
      << response.error().message;
  EXPECT_TRUE(receiver.wait_for([](const auto& s) { return s.hung >= 1; }));
}

TEST(HttpClient, ReportsAResponseCutShort) {
  TestReceiver receiver;
  receiver.set_script([](std::size_t, const auto&) { return Action::close_mid_response(); });
  asio::io_context io;
  auto client = make_client(io, destination(receiver.url()));
  auto response = post(*client, io);
  ASSERT_FALSE(response);
  EXPECT_NE(response.error().message.find("read failed"), std::string::npos)
      << response.error().message;
}

TEST(HttpClient, ConnectionRefusedNamesOnlyTheOrigin) {
  std::uint16_t port = 0;
  {
    TestReceiver gone;
    port = gone.port();
  }
  asio::io_context io;
  auto client =
      make_client(io, destination("http://127.0.0.1:" + std::to_string(port) + "/p?secret=1"));
  auto response = post(*client, io);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().message.rfind(
                "http://127.0.0.1:" + std::to_string(port) + ": connect failed", 0),
            0u)
      << response.error().message;
  EXPECT_EQ(response.error().message.find("secret"), std::string::npos);
}

TEST(HttpClient, RefusesPlainHttpBeyondLoopbackAndAMissingCaFile) {
  asio::io_context io;
  auto plain = HttpClient::create(io.get_executor(), destination("http://example.org/x"));
  ASSERT_FALSE(plain);
  auto d = destination("https://example.org/x");
  d.ca_file = "/nonexistent/ca.pem";
  auto missing = HttpClient::create(io.get_executor(), d);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/nonexistent/ca.pem"), std::string::npos);
}

}  // namespace
}  // namespace kernelwatch::notifiers
