#include "notifiers/destination.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kernelwatch::notifiers {
namespace {

using core::ErrorCode;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string_view to_string(DestinationType type) noexcept {
  switch (type) {
    case DestinationType::Slack:
      return "slack";
    case DestinationType::Webhook:
      return "webhook";
    case DestinationType::Alertmanager:
      return "alertmanager";
  }
  return "webhook";
}

Result<DestinationType> parse_destination_type(std::string_view text) {
  if (text == "slack") return DestinationType::Slack;
  if (text == "webhook") return DestinationType::Webhook;
  if (text == "alertmanager") return DestinationType::Alertmanager;
  return core::fail(ErrorCode::InvalidArgument, "destination type `" + std::string(text) +
                                                    "` is not one of slack, webhook, alertmanager");
}

std::chrono::milliseconds effective_min_interval(const Destination& destination) {
  if (destination.min_interval) return *destination.min_interval;
  return destination.type == DestinationType::Slack ? std::chrono::seconds(1)
                                                    : std::chrono::milliseconds(0);
}

Result<ParsedUrl> parse_url(std::string_view url) {
  ParsedUrl out;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return core::fail(ErrorCode::InvalidArgument, "URL has no scheme (expected https://...)");
  }
  out.scheme = lower(url.substr(0, scheme_end));
  if (out.scheme != "http" && out.scheme != "https") {
    return core::fail(ErrorCode::InvalidArgument,
                      "URL scheme `" + out.scheme + "` is not http or https");
  }
  std::string_view rest = url.substr(scheme_end + 3);
  const auto authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target =
      authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);  // user info is never used nor kept
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return core::fail(ErrorCode::InvalidArgument, "URL has an unterminated IPv6 literal");
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return core::fail(ErrorCode::InvalidArgument, "URL has junk after the IPv6 literal");
      }
      port_text = after.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      authority = authority.substr(0, colon);
    }
    out.host = lower(authority);
  }
  if (out.host.empty()) return core::fail(ErrorCode::InvalidArgument, "URL has no host");
  if (port_text.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      return core::fail(ErrorCode::InvalidArgument, "URL port is not a number in 1..65535");
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  if (const auto hash = target.find('#'); hash != std::string_view::npos) {
    target = target.substr(0, hash);
  }
  out.target = target.empty() ? "/" : std::string(target);
  if (out.target.front() == '?') out.target.insert(out.target.begin(), '/');
  for (char c : out.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return core::fail(ErrorCode::InvalidArgument, "URL path contains a space or control byte");
    }
  }
  return out;
}

std::string redact(std::string_view url) {
  auto parsed = parse_url(url);
  if (!parsed) return "<invalid url>";
  const bool ipv6 = parsed->host.find(':') != std::string::npos;
  return parsed->scheme + "://" + (ipv6 ? "[" + parsed->host + "]" : parsed->host) + ":" +
         std::to_string(parsed->port);
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  // An address, not a name that merely starts like one ("127.evil.example").
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(host), ec);
  return !ec && address.is_loopback();
}

Status validate(const Destination& destination) {
  const std::string where = "destination `" + destination.name + "`";
  if (destination.name.empty()) {
    return core::fail(ErrorCode::InvalidArgument, "a destination needs a name");
  }
  auto url = parse_url(destination.url);
  if (!url) return tl::unexpected(url.error().with_context(where));
  if (url->scheme == "http" && destination.insecure_http != InsecureHttp::Allow &&
      !is_loopback_host(url->host)) {
    return core::fail(ErrorCode::InvalidArgument,
                      where + ": plain http to " + redact(destination.url) +
                          " is refused; use https or set allow_insecure_http");
  }
  const auto& t = destination.timeouts;
  for (auto value : {t.resolve, t.connect, t.handshake, t.write, t.read}) {
    if (value <= std::chrono::milliseconds(0)) {
      return core::fail(ErrorCode::InvalidArgument, where + ": timeouts must be positive");
    }
  }
  const auto& b = destination.backoff;
  if (b.base <= std::chrono::milliseconds(0) || b.cap < b.base ||
      b.max_age <= std::chrono::milliseconds(0)) {
    return core::fail(ErrorCode::InvalidArgument,
                      where + ": backoff needs 0 < base <= cap and a positive max_age");
  }
  return {};
}

}  // namespace kernelwatch::notifiers
