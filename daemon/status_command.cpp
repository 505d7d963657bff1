#include "daemon/status_command.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <ostream>

#include <nlohmann/json.hpp>

#include "daemon/format.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

struct Url {
  std::string host;
  std::string port = "80";
};

core::Result<Url> parse_http_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    return core::fail(
        core::ErrorCode::InvalidArgument,
        "--url must start with http:// (the status endpoint is plain HTTP on loopback)");
  }
  std::string rest = url.substr(kScheme.size());
  if (const auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  Url out;
  if (const auto colon = rest.rfind(':');
      colon != std::string::npos && rest.find(']') == std::string::npos) {
    out.host = rest.substr(0, colon);
    out.port = rest.substr(colon + 1);
  } else {
    out.host = rest;
  }
  if (out.host.empty()) return core::fail(core::ErrorCode::InvalidArgument, "--url has no host");
  return out;
}

core::Result<std::string> http_get(const Url& url, const std::string& target, int timeout_seconds) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found); rc != 0) {
    return core::fail(core::ErrorCode::Unavailable, url.host + ": " + ::gai_strerror(rc));
  }
  int fd = -1;
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{timeout_seconds, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    last_error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0)
    return core::fail(core::ErrorCode::Unavailable,
                      url.host + ":" + url.port + ": " + last_error + " (is the daemon running?)");
  const std::string request =
      "GET " + target + " HTTP/1.1\r\nHost: " + url.host + "\r\nConnection: close\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return core::fail(core::ErrorCode::Unavailable, "sending the request failed");
  }
  std::string response;
  char buffer[16384];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      response.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0) {
      ::close(fd);
      return core::fail(core::ErrorCode::Unavailable,
                        std::string("reading the answer failed: ") + std::strerror(errno));
    }
    break;
  }
  ::close(fd);
  const auto header_end = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 ", 0) != 0 || header_end == std::string::npos) {
    return core::fail(core::ErrorCode::ParseError, "the answer is not HTTP/1.1");
  }
  const std::string status = response.substr(9, 3);
  std::string body = response.substr(header_end + 4);
  if (response.find("Transfer-Encoding: chunked") != std::string::npos ||
      response.find("transfer-encoding: chunked") != std::string::npos) {
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
    body = decoded;
  }
  if (status != "200")
    return core::fail(core::ErrorCode::Unavailable, "HTTP " + status + ": " + body);
  return body;
}

std::string field(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

}  // namespace

int run_status(const StatusOptions& options, std::ostream& out, std::ostream& err) {
  auto url = parse_http_url(options.url);
  if (!url) {
    err << "kernelwatch status: " << url.error().message << '\n';
    return 2;
  }
  auto body = http_get(*url, "/api/v1/status", options.timeout_seconds);
  if (!body) {
    err << "kernelwatch status: " << body.error().message << '\n';
    return 1;
  }
  const json status = json::parse(*body, nullptr, false);
  if (status.is_discarded() || !status.is_object()) {
    err << "kernelwatch status: the answer is not a JSON object\n";
    return 1;
  }
  if (options.format == OutputFormat::Json) {
    out << status.dump(2) << '\n';
    return 0;
  }
  const json& cycle = status.value("cycle", json::object());
  out << "kernelwatch " << field(status, "version") << "  backend " << field(status, "backend");
  if (const auto note = field(status, "backendNote"); note != "-" && !note.empty())
    out << " (" << note << ")";
  out << "\nstarted " << field(status, "startedAt") << "  database " << field(status, "database")
      << '\n';
  out << "cycles " << field(cycle, "count")
      << (cycle.value("running", false) ? " (one running)" : "") << "  last "
      << field(cycle, "lastEnd") << "  next " << field(cycle, "next") << '\n';
  for (const auto& d : status.value("outbox", json::array())) {
    out << "outbox " << field(d, "destination") << ": pending " << field(d, "pending")
        << ", delivered " << field(d, "delivered") << ", dead " << field(d, "dead") << '\n';
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& k : status.value("keys", json::array())) {
    const auto median = k.value("lastMedianNs", std::int64_t{0});
    std::string band = "-";
    if (k.contains("band") && k["band"].is_object()) {
      band = format_duration(std::chrono::nanoseconds{k["band"].value("lower", std::int64_t{0})}) +
             " .. " +
             format_duration(std::chrono::nanoseconds{k["band"].value("upper", std::int64_t{0})});
    }
    std::string alert = "-";
    if (k.contains("openAlert") && k["openAlert"].is_object()) {
      alert = field(k["openAlert"], "kind") + " " + field(k["openAlert"], "state");
    }
    rows.push_back({field(k, "benchmark"), field(k, "provider"), field(k, "workload"),
                    field(k, "environment"),
                    median > 0 ? format_duration(std::chrono::nanoseconds{median}) : "-", band,
                    field(k, "verdict"), alert});
  }
  out << '\n';
  print_table(out,
              {"BENCHMARK", "PROVIDER", "WORKLOAD", "ENVIRONMENT", "LAST MEDIAN", "BAND", "VERDICT",
               "ALERT"},
              rows);
  return 0;
}

}  // namespace kernelwatch::daemon
