#include "tests/support/loopback_http.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <thread>

namespace kernelwatch::testing {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string dechunk(const std::string& body) {
  std::string decoded;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const auto eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const std::size_t size = std::stoul(body.substr(pos, eol - pos), nullptr, 16);
    if (size == 0) break;
    decoded += body.substr(eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return decoded;
}

}  // namespace

HttpReply http(std::uint16_t port, const std::string& method, const std::string& path,
               const std::string& body, const std::string& token) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  std::string request =
      method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST") {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buffer[65536];
  ssize_t n = 0;
  while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) {
    response.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  HttpReply reply;
  if (response.size() < 12 || response.compare(0, 5, "HTTP/") != 0) return reply;
  reply.status = std::stoi(response.substr(9, 3));
  const auto end = response.find("\r\n\r\n");
  if (end == std::string::npos) return reply;
  reply.body = response.substr(end + 4);
  // Only the header says how the body is framed (a body may well contain the word).
  if (lower(response.substr(0, end)).find("transfer-encoding: chunked") != std::string::npos) {
    reply.body = dechunk(reply.body);
  }
  return reply;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace kernelwatch::testing
