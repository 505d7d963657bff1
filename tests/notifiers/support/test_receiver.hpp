// A real HTTP/HTTPS server on 127.0.0.1 (ephemeral port, own thread, Beast) for notifier tests
// and benchmarks: scriptable answers (status + headers, hang, close mid-response), a record of
// every request, and condition waits instead of sleeps.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kernelwatch::notifiers::testing {

struct RecordedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  unsigned answered_status = 0;  // 0 when the action was not a complete response
  std::chrono::steady_clock::time_point received_at{};

  [[nodiscard]] std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Action {
  enum class Kind { Respond, Hang, CloseMidResponse };
  Kind kind = Kind::Respond;
  unsigned status = 200;
  std::string body = "ok";
  std::vector<std::pair<std::string, std::string>> headers;

  static Action respond(unsigned status, std::string body = "ok") {
    return Action{Kind::Respond, status, std::move(body), {}};
  }
  static Action hang() { return Action{Kind::Hang, 0, {}, {}}; }
  static Action close_mid_response() { return Action{Kind::CloseMidResponse, 200, {}, {}}; }
};

// Called on the receiver thread with the request's 0-based index.
using Script = std::function<Action(std::size_t index, const RecordedRequest& request)>;

struct ServerIdentity {
  std::string cert_pem;
  std::string key_pem;
};

class TestReceiver {
 public:
  // Plain HTTP without an identity, HTTPS with one. Answers 200 "ok" until a script is set.
  explicit TestReceiver(std::optional<ServerIdentity> tls = std::nullopt);
  ~TestReceiver();
  TestReceiver(const TestReceiver&) = delete;
  TestReceiver& operator=(const TestReceiver&) = delete;

  [[nodiscard]] std::uint16_t port() const;
  // "http(s)://127.0.0.1:<port><path>"
  [[nodiscard]] std::string url(const std::string& path = "/hook") const;
  void set_script(Script script);

  struct Snapshot {
    std::vector<RecordedRequest> requests;
    std::size_t connections = 0;
    std::size_t tls_failures = 0;  // handshakes the client broke off
    std::size_t hung = 0;          // hanging requests whose client has since gone away
  };
  [[nodiscard]] Snapshot snapshot() const;
  // Waits until `done(snapshot)` holds or `deadline` passes; returns whether it held.
  bool wait_for(const std::function<bool(const Snapshot&)>& done,
                std::chrono::milliseconds deadline = std::chrono::seconds(30)) const;
  bool wait_for_requests(std::size_t count,
                         std::chrono::milliseconds deadline = std::chrono::seconds(30)) const;
  // Number of recorded requests answered with 2xx (cheap; for benchmarks).
  [[nodiscard]] std::size_t answered_2xx() const;
  bool wait_for_2xx(std::size_t count,
                    std::chrono::milliseconds deadline = std::chrono::seconds(60)) const;
  // Benchmarks: stop recording requests (counts and answered_2xx() still work).
  enum class Recording { Full, CountsOnly };
  void set_recording(Recording recording);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Script helpers.
[[nodiscard]] Script fail_then_succeed(std::size_t failures, unsigned failure_status = 500);

// Slack's limits a message must respect; returns what is violated ("" when none).
[[nodiscard]] std::string slack_limit_violations(const std::string& body);

}  // namespace kernelwatch::notifiers::testing
