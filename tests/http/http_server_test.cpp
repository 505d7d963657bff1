// The HTTP server over real sockets on 127.0.0.1: the server runs its own io_context thread, the
// test speaks HTTP/1.1 through a plain blocking POSIX socket with generous timeouts.
#include "http/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

namespace kernelwatch::http {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr std::string_view kToken = "s3cret-token-value";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string raw_head;
};

// A blocking client: every read and write gives up after 5 s, so a server that fails to answer
// or to close fails the test instead of hanging it.
class Client {
 public:
  explicit Client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  [[nodiscard]] bool connected() const { return connected_; }

  // False once the server has closed or reset the connection.
  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  std::optional<Response> read_response() {
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return std::nullopt;
    }
    Response response;
    response.raw_head = buffer_.substr(0, end + 4);
    buffer_.erase(0, end + 4);
    std::size_t line_end = response.raw_head.find("\r\n");
    const std::string status_line = response.raw_head.substr(0, line_end);
    if (status_line.rfind("HTTP/1.1 ", 0) != 0) return std::nullopt;
    response.status = std::stoi(status_line.substr(9, 3));
    std::size_t position = line_end + 2;
    while (position < end) {
      line_end = response.raw_head.find("\r\n", position);
      const std::string line = response.raw_head.substr(position, line_end - position);
      const std::size_t colon = line.find(':');
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      response.headers[lower(line.substr(0, colon))] = value;
      position = line_end + 2;
    }
    std::size_t length = 0;
    if (auto it = response.headers.find("content-length"); it != response.headers.end()) {
      length = std::stoul(it->second);
    }
    if (head_) length = 0;
    while (buffer_.size() < length) {
      if (!fill()) return std::nullopt;
    }
    response.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return response;
  }

  // Reads (and drops) until the server closes: true on EOF or reset, false when the read
  // timed out with the connection still open.
  bool wait_closed() {
    buffer_.clear();
    char chunk[4096];
    while (true) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET || errno == EPIPE;
    }
  }

  void expect_head_response(bool head) { head_ = head; }

 private:
  bool fill() {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool head_ = false;
  std::string buffer_;
};

std::string get(std::string_view target, std::string_view extra_headers = {}) {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\n" +
         std::string(extra_headers) + "\r\n";
}

std::string post(std::string_view target, std::string_view body, std::string_view authorization) {
  std::string request = "POST " + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\n";
  if (!authorization.empty()) request += "Authorization: " + std::string(authorization) + "\r\n";
  request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + std::string(body);
  return request;
}

std::string bearer() {
  return "Bearer " + std::string(kToken);
}

// The server under test on its own io_context thread, with handlers that count their calls.
class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}, std::string token = std::string(kToken)) {
    options.port = 0;
    auto created = HttpServer::create(io_, std::move(options), routes(), std::move(token),
                                      [this](std::string_view line) {
                                        std::lock_guard lock(log_mutex_);
                                        log_.emplace_back(line);
                                      });
    ASSERT_TRUE(created) << created.error().message;
    server_ = std::move(*created);
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }

  // stop() must leave nothing behind: run() returns and the thread joins.
  void stop() {
    if (!thread_.joinable()) return;
    boost::asio::post(io_, [this] { server_->stop(); });
    thread_.join();
  }

  void TearDown() override { stop(); }

  std::vector<Route> routes() {
    std::vector<Route> out;
    out.push_back({"GET", "/healthz", Access::Public, [](const HttpRequest&) {
                     return HttpResponse::text(200, "ok\n", "text/plain");
                   }});
    out.push_back({"GET", "/api/v1/runs", Access::Public, [](const HttpRequest& request) {
                     return HttpResponse::json(200, json{{"query", request.query},
                                                         {"path", request.path},
                                                         {"remote", request.remote}});
                   }});
    out.push_back(
        {"POST", "/api/v1/runs", Access::TokenRequired, [this](const HttpRequest& request) {
           ++mutating_calls_;
           return HttpResponse::json(
               201, json{{"bytes", request.body.size()}, {"content_type", request.content_type}});
         }});
    out.push_back(
        {"GET", "/api/v1/alerts/{id}", Access::Public, [](const HttpRequest& request) {
           return HttpResponse::json(200, json{{"params", request.params}, {"path", request.path}});
         }});
    out.push_back({"POST", "/api/v1/alerts/{id}/ack", Access::TokenRequired,
                   [this](const HttpRequest& request) {
                     ++mutating_calls_;
                     auto body = json::parse(request.body);
                     return HttpResponse::json(200, json{{"id", request.params.at("id")},
                                                         {"rebaseline", body.at("rebaseline")}});
                   }});
    // A body kept by a cache, larger than any socket buffer.
    out.push_back({"GET", "/kept", Access::Public, [](const HttpRequest&) {
                     static const auto kept = std::make_shared<const std::string>(
                         std::string(3 * 1024 * 1024, 'k') + "end");
                     return HttpResponse::shared(200, kept, "text/html");
                   }});
    out.push_back({"GET", "/boom", Access::Public, [](const HttpRequest&) -> HttpResponse {
                     throw std::runtime_error("leaked-detail-xyz");
                   }});
    return out;
  }

  std::vector<std::string> log_lines() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

  Response exchange(const std::string& request) {
    Client client(server_->port());
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.send(request));
    auto response = client.read_response();
    EXPECT_TRUE(response) << "no response to " << request.substr(0, request.find('\r'));
    return response.value_or(Response{});
  }

  boost::asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::atomic<int> mutating_calls_{0};
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(HttpServerTest, ServesAGetRouteWithHouseHeaders) {
  start();
  const auto response = exchange(get("/healthz"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "ok\n");
  EXPECT_EQ(response.headers.at("content-type"), "text/plain");
  EXPECT_EQ(response.headers.at("server"), "kernelwatch");
  EXPECT_EQ(response.headers.at("cache-control"), "no-store");
  stop();
  const auto lines = log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("GET /healthz 200"), std::string::npos) << lines[0];
}

TEST_F(HttpServerTest, DecodesPathParametersAndQuery) {
  start();
  auto response = exchange(get("/api/v1/alerts/a%20b%2Fc"));
  ASSERT_EQ(response.status, 200) << response.body;
  auto body = json::parse(response.body);
  EXPECT_EQ(body["params"]["id"], "a b/c");
  EXPECT_EQ(body["path"], "/api/v1/alerts/a b/c");

  response = exchange(
      get("/api/v1/runs?benchmark=tvd%2Fbackward&provider=liger&workload=a+b&limit=5&empty="));
  ASSERT_EQ(response.status, 200) << response.body;
  body = json::parse(response.body);
  EXPECT_EQ(body["path"], "/api/v1/runs");
  EXPECT_EQ(body["query"], (json{{"benchmark", "tvd/backward"},
                                 {"provider", "liger"},
                                 {"workload", "a b"},
                                 {"limit", "5"},
                                 {"empty", ""}}));
  EXPECT_EQ(body["remote"].get<std::string>().rfind("127.0.0.1:", 0), 0u);

  EXPECT_EQ(exchange(get("/api/v1/runs?x=%zz")).status, 400);
}

TEST_F(HttpServerTest, ATransferEncodingOtherThanChunkedIs400AndNeverReachesTheHandler) {
  start();
  const auto response = exchange(
      "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + std::string(kToken) +
      "\r\nTransfer-Encoding: gzip\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(mutating_calls_, 0);
}

TEST_F(HttpServerTest, UnknownPathIs404AndOtherMethodIs405) {
  start();
  auto response = exchange(get("/x"));
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.body, R"({"error":"no such endpoint: GET /x"})");
  EXPECT_EQ(response.headers.at("content-type"), "application/json");

  EXPECT_EQ(exchange(get("/api/v1/alerts/7/ack")).status, 405);
  response = exchange("DELETE /api/v1/runs HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.headers.at("allow"), "GET, HEAD, POST");
  EXPECT_EQ(json::parse(response.body).contains("error"), true);
  EXPECT_EQ(exchange(get("/healthz/")).status, 404);
  EXPECT_EQ(mutating_calls_, 0);
}

TEST_F(HttpServerTest, MissingOrWrongTokenIs401AndTheHandlerIsNotCalled) {
  start();
  const std::string body = R"({"rebaseline": true})";
  const std::vector<std::string> wrong = {"",
                                          "Bearer wrong",
                                          "Bearer " + std::string(kToken.substr(0, 5)),
                                          "Bearer " + std::string(kToken) + "x",
                                          "Basic " + std::string(kToken),
                                          std::string(kToken),
                                          "Bearer"};
  for (const auto& authorization : wrong) {
    const auto response = exchange(post("/api/v1/alerts/3/ack", body, authorization));
    EXPECT_EQ(response.status, 401) << authorization;
    EXPECT_EQ(response.body, R"({"error":"missing or wrong bearer token"})");
    EXPECT_EQ(response.raw_head.find(kToken), std::string::npos);
  }
  EXPECT_EQ(mutating_calls_, 0);

  const auto response = exchange(post("/api/v1/alerts/3/ack", body, bearer()));
  EXPECT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(json::parse(response.body), (json{{"id", "3"}, {"rebaseline", true}}));
  EXPECT_EQ(mutating_calls_, 1);
  // Scheme names are case-insensitive.
  EXPECT_EQ(exchange(post("/api/v1/runs", "{}", "bearer " + std::string(kToken))).status, 201);
  EXPECT_EQ(mutating_calls_, 2);

  stop();
  for (const auto& line : log_lines()) {
    EXPECT_EQ(line.find(kToken), std::string::npos) << line;
    EXPECT_EQ(line.find("rebaseline"), std::string::npos) << line;
  }
}

TEST_F(HttpServerTest, NoConfiguredTokenIs403UntilOneIsSet) {
  start({}, "");
  auto response = exchange(post("/api/v1/runs", "{}", bearer()));
  EXPECT_EQ(response.status, 403);
  EXPECT_EQ(response.body, R"({"error":"no token configured"})");
  EXPECT_EQ(exchange(post("/api/v1/runs", "{}", "Bearer ")).status, 403);
  EXPECT_EQ(mutating_calls_, 0);

  server_->set_token(std::string(kToken));
  EXPECT_EQ(exchange(post("/api/v1/runs", "{}", bearer())).status, 201);
  server_->set_token("another");
  EXPECT_EQ(exchange(post("/api/v1/runs", "{}", bearer())).status, 401);
  EXPECT_EQ(exchange(post("/api/v1/runs", "{}", "Bearer another")).status, 201);
  EXPECT_EQ(mutating_calls_, 2);
  // Public routes never need a token.
  EXPECT_EQ(exchange(get("/healthz")).status, 200);
}

TEST_F(HttpServerTest, ContentLengthOverTheLimitIs413WithoutReadingTheBody) {
  start();
  Client client(server_->port());
  ASSERT_TRUE(client.send("POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer() +
                          "\r\nContent-Length: 2097152\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(response->headers.at("connection"), "close");
  EXPECT_NE(json::parse(response->body).at("error").get<std::string>().find("1048576"),
            std::string::npos);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(mutating_calls_, 0);
}

TEST_F(HttpServerTest, BodyUpToTheLimitIsAccepted) {
  HttpServerOptions options;
  options.max_body_bytes = 4096;
  start(options);
  const auto response = exchange(post("/api/v1/runs", std::string(4096, 'x'), bearer()));
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(json::parse(response.body),
            (json{{"bytes", 4096}, {"content_type", "application/json"}}));
  EXPECT_EQ(exchange(post("/api/v1/runs", std::string(4097, 'x'), bearer())).status, 413);
  EXPECT_EQ(mutating_calls_, 1);
}

TEST_F(HttpServerTest, ChunkedBodyGrowingPastTheLimitIs413) {
  HttpServerOptions options;
  options.max_body_bytes = 64 * 1024;
  start(options);
  Client client(server_->port());
  std::string request = "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer() +
                        "\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk(8192, 'x');
  for (int i = 0; i < 16; ++i) request += "2000\r\n" + chunk + "\r\n";
  request += "0\r\n\r\n";
  (void)client.send(request);  // the server may stop reading part-way
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(mutating_calls_, 0);
}

TEST_F(HttpServerTest, OversizedHeadersAre431) {
  HttpServerOptions options;
  options.max_header_bytes = 4096;
  start(options);
  const auto response = exchange(get("/healthz", "X-Filler: " + std::string(8192, 'a') + "\r\n"));
  EXPECT_EQ(response.status, 431);
  EXPECT_TRUE(json::parse(response.body).contains("error"));
}

TEST_F(HttpServerTest, MalformedRequestsAre400) {
  start();
  EXPECT_EQ(exchange("GARBAGE\r\n\r\n").status, 400);
  EXPECT_EQ(exchange("GET /healthz\r\n\r\n").status, 400);
  EXPECT_EQ(exchange("GET healthz HTTP/1.1\r\nHost: x\r\n\r\n").status, 400);
  EXPECT_EQ(exchange("POST /api/v1/runs HTTP/1.1\r\nContent-Length: abc\r\n\r\n").status, 400);
}

TEST_F(HttpServerTest, SlowClientIsDisconnected) {
  HttpServerOptions options;
  options.header_timeout = 300ms;
  start(options);
  Client client(server_->port());
  ASSERT_TRUE(client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // never finishes
  EXPECT_TRUE(client.wait_closed());  // the socket's own timeout is 5 s
  // The line is written after the close the client saw: wait for it (with a deadline).
  const auto noted = [&] {
    const auto lines = log_lines();
    return std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
      return line.find("no complete request header within 300 ms") != std::string::npos;
    });
  };
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!noted() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE(noted());
}

// The header deadline counts from the accept, not from the last byte: a client that keeps
// sending one byte at a time is still closed.
TEST_F(HttpServerTest, TricklingHeaderIsDisconnectedAtTheHeaderDeadline) {
  HttpServerOptions options;
  options.header_timeout = 500ms;
  options.read_timeout = 60s;
  options.idle_timeout = 60s;
  start(options);
  Client client(server_->port());
  const std::string request = "GET /healthz HTTP/1.1\r\nX-Slow: " + std::string(1000, 'a');
  const auto started = std::chrono::steady_clock::now();
  bool closed = false;
  // One byte every 50 ms: a pacing of the client, not a synchronization (the server's close,
  // seen as a failed send or EOF, ends the loop).
  for (std::size_t i = 0; i < request.size() && !closed; ++i) {
    closed = !client.send(request.substr(i, 1));
    std::this_thread::sleep_for(50ms);
    if (std::chrono::steady_clock::now() - started > 20s) break;
  }
  EXPECT_TRUE(closed || client.wait_closed());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
}

TEST_F(HttpServerTest, SlowBodyIsDisconnected) {
  HttpServerOptions options;
  options.read_timeout = 300ms;
  start(options);
  Client client(server_->port());
  ASSERT_TRUE(client.send("POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer() +
                          "\r\nContent-Length: 100\r\n\r\n{\"partial\":"));
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(mutating_calls_, 0);
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  start();
  Client client(server_->port());
  ASSERT_TRUE(client.send(get("/healthz")));
  auto first = client.read_response();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->headers.count("connection"), 0u);
  ASSERT_TRUE(client.send(get("/api/v1/alerts/9")));
  auto second = client.read_response();
  ASSERT_TRUE(second);
  EXPECT_EQ(json::parse(second->body)["params"]["id"], "9");
  // A 404 keeps the connection, and pipelined requests are answered in order.
  ASSERT_TRUE(client.send(get("/nope") + get("/healthz", "Connection: close\r\n")));
  auto third = client.read_response();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 404);
  auto fourth = client.read_response();
  ASSERT_TRUE(fourth);
  EXPECT_EQ(fourth->status, 200);
  EXPECT_EQ(fourth->headers.at("connection"), "close");
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  HttpServerOptions options;
  options.idle_timeout = 300ms;
  start(options);
  Client client(server_->port());
  ASSERT_TRUE(client.send(get("/healthz")));
  ASSERT_TRUE(client.read_response());
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(HttpServerTest, HeadAnswersWithoutABody) {
  start();
  Client client(server_->port());
  ASSERT_TRUE(client.send("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  client.expect_head_response(true);
  auto head = client.read_response();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headers.at("content-length"), "3");
  client.expect_head_response(false);
  ASSERT_TRUE(client.send(get("/healthz")));
  auto next = client.read_response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->body, "ok\n");
}

TEST_F(HttpServerTest, ASharedBodyIsSentWholeAndHeadTellsItsLength) {
  start();
  Client client(server_->port());
  ASSERT_TRUE(client.send(get("/kept")));
  auto kept = client.read_response();
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->headers.at("content-type"), "text/html");
  EXPECT_EQ(kept->body.size(), 3u * 1024 * 1024 + 3);
  EXPECT_EQ(kept->body.substr(kept->body.size() - 4), "kend");
  ASSERT_TRUE(client.send("HEAD /kept HTTP/1.1\r\nHost: x\r\n\r\n"));
  client.expect_head_response(true);
  auto head = client.read_response();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->headers.at("content-length"), std::to_string(3 * 1024 * 1024 + 3));
}

TEST_F(HttpServerTest, ExpectContinueGetsA100BeforeTheBody) {
  start();
  Client client(server_->port());
  const std::string body = R"({"rebaseline": false})";
  ASSERT_TRUE(client.send(
      "POST /api/v1/alerts/5/ack HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer() +
      "\r\nExpect: 100-continue\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  auto proceed = client.read_response();
  ASSERT_TRUE(proceed);
  EXPECT_EQ(proceed->status, 100);
  ASSERT_TRUE(client.send(body));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(mutating_calls_, 1);
}

TEST_F(HttpServerTest, HandlerExceptionIs500WithoutDetails) {
  start();
  const auto response = exchange(get("/boom"));
  EXPECT_EQ(response.status, 500);
  EXPECT_EQ(response.body, R"({"error":"internal error"})");
  EXPECT_EQ(exchange(get("/healthz")).status, 200);  // the server carries on
  stop();
  bool noted = false;
  for (const auto& line : log_lines()) {
    EXPECT_EQ(line.find("leaked-detail-xyz"), std::string::npos) << line;
    noted = noted || line.find("/boom") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

// At the limit a new connection replaces the one that has waited longest for a request header
// (here an idle kept-alive one): slow or idle clients cannot keep others out.
TEST_F(HttpServerTest, ConnectionLimitReplacesTheLongestWaitingConnection) {
  HttpServerOptions options;
  options.max_connections = 2;
  start(options);
  Client first(server_->port());
  ASSERT_TRUE(first.send(get("/healthz")));
  ASSERT_TRUE(first.read_response());  // accepted and still open (keep-alive)
  Client slow(server_->port());
  ASSERT_TRUE(slow.send("GET /heal"));  // waits for the rest of its header
  Client third(server_->port());
  ASSERT_TRUE(third.send(get("/healthz")));
  const auto answer = third.read_response();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 200);
  EXPECT_TRUE(first.wait_closed());  // the longest waiting
  // The slow one waited less long than the first: it stays (its deadline is far).
  ASSERT_TRUE(slow.send("thz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto slow_answer = slow.read_response();
  ASSERT_TRUE(slow_answer);
  EXPECT_EQ(slow_answer->status, 200);
}

// One client address may hold max_connections_per_client connections; past it, its own
// longest-waiting connection makes room, and another client's connections are not touched.
TEST_F(HttpServerTest, PerClientLimitEvictsThatClientsWaitingConnections) {
  HttpServerOptions options;
  options.max_connections_per_client = 3;
  start(options);
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 6; ++i) {
    slow.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->send("GET /heal"));
  }
  // The three oldest made room for the three newest.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(slow[static_cast<std::size_t>(i)]->wait_closed()) << i;
  // A complete request from the same address is still answered, by replacing a slow one.
  const auto answer = exchange(get("/healthz"));
  EXPECT_EQ(answer.status, 200);
  EXPECT_TRUE(slow[3]->wait_closed());
}

TEST_F(HttpServerTest, TransferEncodingOtherThanExactlyChunkedIsRefused) {
  start();
  for (const std::string coding : {"gzip, chunked", "chunked, chunked", "identity, chunked"}) {
    const auto response =
        exchange("POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer() +
                 "\r\nTransfer-Encoding: " + coding + "\r\n\r\n4\r\n{}{}\r\n0\r\n\r\n");
    EXPECT_EQ(response.status, 400) << coding;
    EXPECT_NE(response.body.find("only chunked"), std::string::npos) << response.body;
  }
  // Two Transfer-Encoding fields are two codings.
  EXPECT_EQ(exchange("POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer() +
                     "\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "2\r\n{}\r\n0\r\n\r\n")
                .status,
            400);
  EXPECT_EQ(mutating_calls_, 0);
  // Exactly chunked, in any case, is read.
  const auto accepted =
      exchange("POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: " + bearer() +
               "\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(accepted.status, 201) << accepted.body;
  EXPECT_EQ(mutating_calls_, 1);
}

// Handlers run on the handler context's thread; while one is busy there, quick answers (health
// checks, pre-rendered pages) still come from the I/O thread.
TEST(HttpServerHandlerContext, ABusyHandlerDoesNotHoldUpQuickAnswers) {
  boost::asio::io_context io;
  boost::asio::io_context work;
  std::mutex mutex;
  std::condition_variable changed;
  bool entered = false;
  bool release = false;
  std::thread::id handler_thread;
  std::vector<Route> routes;
  routes.push_back({"GET", "/slow", Access::Public, [&](const HttpRequest&) {
                      std::unique_lock lock(mutex);
                      handler_thread = std::this_thread::get_id();
                      entered = true;
                      changed.notify_all();
                      changed.wait(lock, [&] { return release; });
                      return HttpResponse::text(200, "slow\n", "text/plain");
                    }});
  std::atomic<int> handler_calls{0};
  routes.push_back({"GET", "/quick", Access::Public,
                    [&](const HttpRequest&) {
                      ++handler_calls;
                      return HttpResponse::text(200, "from the handler\n", "text/plain");
                    },
                    [](const HttpRequest& r) -> std::optional<HttpResponse> {
                      if (r.query.count("miss")) return std::nullopt;
                      return HttpResponse::text(200, "quick\n", "text/plain");
                    }});
  HttpServerOptions options;
  options.port = 0;
  options.handler_context = &work;
  auto created = HttpServer::create(io, options, std::move(routes), "");
  ASSERT_TRUE(created) << created.error().message;
  auto server = std::move(*created);
  server->start();
  std::thread io_thread([&] { io.run(); });
  auto guard = boost::asio::make_work_guard(work);
  std::thread work_thread([&] { work.run(); });

  Client slow(server->port());
  ASSERT_TRUE(slow.send(get("/slow")));
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, 30s, [&] { return entered; }));
  }
  Client quick(server->port());
  ASSERT_TRUE(quick.send(get("/quick")));
  const auto answer = quick.read_response();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->body, "quick\n");
  EXPECT_EQ(handler_calls, 0);
  {
    std::lock_guard lock(mutex);
    release = true;
    changed.notify_all();
  }
  const auto slow_answer = slow.read_response();
  ASSERT_TRUE(slow_answer);
  EXPECT_EQ(slow_answer->body, "slow\n");
  EXPECT_EQ(handler_thread, work_thread.get_id());
  // The quick handler declining leaves the answer to the handler.
  ASSERT_TRUE(quick.send(get("/quick?miss=1")));
  const auto missed = quick.read_response();
  ASSERT_TRUE(missed);
  EXPECT_EQ(missed->body, "from the handler\n");
  EXPECT_EQ(handler_calls, 1);

  boost::asio::post(io, [&] { server->stop(); });
  io_thread.join();
  guard.reset();
  work.stop();
  work_thread.join();
}

TEST_F(HttpServerTest, StopClosesOpenConnections) {
  start();
  Client client(server_->port());
  ASSERT_TRUE(client.send(get("/healthz")));
  ASSERT_TRUE(client.read_response());
  Client idle(server_->port());
  ASSERT_TRUE(idle.send("GET /heal"));
  stop();  // joins the io thread: nothing may be left running
  EXPECT_TRUE(client.wait_closed());
  EXPECT_TRUE(idle.wait_closed());
}

TEST_F(HttpServerTest, AddressInUseIsAnError) {
  start();
  boost::asio::io_context other;
  HttpServerOptions options;
  options.port = server_->port();
  auto second = HttpServer::create(other, options, routes(), "");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, core::ErrorCode::IoError);
  const std::string& message = second.error().message;
  EXPECT_NE(message.find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
      << message;
  EXPECT_NE(lower(message).find("in use"), std::string::npos) << message;
}

TEST(HttpServerCreate, RejectsBadRoutesAndOptions) {
  boost::asio::io_context io;
  const Handler ok = [](const HttpRequest&) { return HttpResponse::text(200, "", "text/plain"); };
  HttpServerOptions options;
  options.port = 0;
  for (const auto& pattern : {"", "no-slash", "/a//b", "/a/{}", "/a/{id", "/a/x{id}", "/{a}/{a}"}) {
    auto created = HttpServer::create(io, options, {{"GET", pattern, Access::Public, ok}}, "");
    ASSERT_FALSE(created) << pattern;
    EXPECT_EQ(created.error().code, core::ErrorCode::InvalidArgument);
  }
  EXPECT_FALSE(HttpServer::create(io, options, {{"get", "/a", Access::Public, ok}}, ""));
  EXPECT_FALSE(HttpServer::create(io, options, {{"GET", "/a", Access::Public, nullptr}}, ""));
  EXPECT_FALSE(HttpServer::create(
      io, options, {{"GET", "/a", Access::Public, ok}, {"GET", "/a", Access::Public, ok}}, ""));
  options.host = "not-an-address";
  auto created = HttpServer::create(io, options, {}, "");
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, core::ErrorCode::InvalidArgument);
  options.host = "127.0.0.1";
  options.read_timeout = 0ms;
  EXPECT_FALSE(HttpServer::create(io, options, {}, ""));
}

TEST(HttpResponse, BuildsJsonErrorsAndText) {
  auto error = HttpResponse::error(400, "bad \"input\"\n");
  EXPECT_EQ(error.status, 400u);
  EXPECT_EQ(error.content_type, "application/json");
  EXPECT_EQ(json::parse(error.body), (json{{"error", "bad \"input\"\n"}}));
  // Invalid UTF-8 from a client never makes the error itself fail.
  auto invalid = HttpResponse::error(404, std::string("no such endpoint: GET /\xff"));
  json parsed;
  EXPECT_NO_THROW(parsed = json::parse(invalid.body));
  EXPECT_TRUE(parsed.contains("error"));
  auto text = HttpResponse::text(200, "a 1\n", "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(text.body, "a 1\n");
  EXPECT_EQ(text.content_type, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace
}  // namespace kernelwatch::http
