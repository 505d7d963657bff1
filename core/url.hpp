// The one parser of the addresses kernelwatch is given: http:// and https:// URLs (notifier
// destinations, the status command's --url, the config's public_url) and host:port (the config's
// http.listen). Errors never repeat the text: a URL may carry a secret in any part.
// Plain C++, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kernelwatch::core {

// "example.org:8443", "[::1]:9093", "localhost".
struct HostPort {
  std::string host;                 // IPv6 without its brackets
  std::optional<std::string> port;  // what follows the colon, as written; none without a colon
};

// Host names and IPv4 addresses are A-Z, a-z, 0-9, '.', '-', '_'; IPv6 addresses are written in
// brackets (and may add ':' and a '%' zone). InvalidArgument with the reason alone ("write IPv6
// addresses in brackets"); the port is the caller's to read.
[[nodiscard]] Result<HostPort> parse_host_port(std::string_view text);

struct Url {
  std::string scheme;      // "http" | "https"
  std::string host;        // lower case; IPv6 without its brackets
  std::uint16_t port = 0;  // the scheme's default when the URL names none
  std::string target;      // path and query, at least "/"; the fragment dropped
};

// An absolute http:// or https:// URL (any case); user info is dropped. Errors are
// InvalidArgument and say `subject` ("the value of SLACK_URL is not an http:// or https:// URL").
[[nodiscard]] Result<Url> parse_url(std::string_view text, std::string_view subject = "the URL");

}  // namespace kernelwatch::core
