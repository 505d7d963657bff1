#include "core/url.hpp"

#include <algorithm>
#include <charconv>

namespace kernelwatch::core {
namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return lower(c); });
  return out;
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool ipv6_char(char c) {
  return c == ':' || c == '%' || name_char(c);
}

tl::unexpected<Error> invalid(std::string message) {
  return fail(ErrorCode::InvalidArgument, std::move(message));
}

}  // namespace

Result<HostPort> parse_host_port(std::string_view text) {
  HostPort out;
  std::string_view host;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      return invalid("the bracket around the IPv6 address is not closed");
    }
    host = text.substr(1, close - 1);
    const std::string_view after = text.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return invalid("only :port may follow an IPv6 address in brackets");
    }
    if (!after.empty()) out.port = std::string(after.substr(1));
    if (!std::all_of(host.begin(), host.end(), ipv6_char)) {
      return invalid("the IPv6 address has characters other than hex digits, ':' and a '%' zone");
    }
  } else {
    const auto colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos) {
      return invalid("write IPv6 addresses in brackets");
    }
    host = text.substr(0, colon);
    if (colon != std::string_view::npos) out.port = std::string(text.substr(colon + 1));
    if (!std::all_of(host.begin(), host.end(), name_char)) {
      return invalid("the host has characters other than A-Z, a-z, 0-9, '.', '-', '_'");
    }
  }
  if (host.empty()) return invalid("the host is empty");
  out.host = std::string(host);
  return out;
}

Result<Url> parse_url(std::string_view text, std::string_view subject) {
  const std::string who(subject);
  Url out;
  const auto scheme_end = text.find("://");
  out.scheme = lower(text.substr(0, scheme_end == std::string_view::npos ? 0 : scheme_end));
  if (out.scheme != "http" && out.scheme != "https") {
    return invalid(who + " is not an http:// or https:// URL");
  }
  const std::string_view rest = text.substr(scheme_end + 3);
  const auto authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target =
      authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);  // user info is never used nor kept
  }
  if (authority.empty()) return invalid(who + " has no host");
  auto address = parse_host_port(authority);
  if (!address) return invalid(who + ": " + address.error().message);
  out.host = lower(address->host);
  if (!address->port || address->port->empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else {
    const std::string& digits = *address->port;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || value == 0 || value > 65535) {
      return invalid(who + " has a port that is not a number in 1..65535");
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  target = target.substr(0, target.find('#'));
  out.target = target.empty() ? "/" : std::string(target);
  if (out.target.front() == '?') out.target.insert(out.target.begin(), '/');
  if (std::any_of(out.target.begin(), out.target.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; })) {
    return invalid(who + " has a space or control byte in its path");
  }
  return out;
}

}  // namespace kernelwatch::core
