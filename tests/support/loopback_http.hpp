// What the end-to-end tests need to talk to a kernelwatch daemon they started: one blocking
// HTTP/1.1 request on a fresh loopback connection, and a poll that waits on a condition.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace kernelwatch::testing {

struct HttpReply {
  int status = 0;    // 0: the connection failed or the answer was not HTTP
  std::string body;  // de-chunked
};

// METHOD PATH to 127.0.0.1:port with `Connection: close`; a POST carries `body` as JSON, and a
// non-empty `token` goes in `Authorization: Bearer`. Waits at most 30 s for each read.
[[nodiscard]] HttpReply http(std::uint16_t port, const std::string& method, const std::string& path,
                             const std::string& body = "", const std::string& token = "");

// Polls `done` every 20 ms until it holds or `deadline` passes; returns its last answer (a
// condition decides, never a sleep).
bool eventually(const std::function<bool()>& done,
                std::chrono::milliseconds deadline = std::chrono::seconds(60));

}  // namespace kernelwatch::testing
