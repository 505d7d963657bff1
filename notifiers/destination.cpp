#include "notifiers/destination.hpp"

#include <boost/asio/ip/address.hpp>

#include "notifiers/integration.hpp"

namespace kernelwatch::notifiers {
namespace {
using core::ErrorCode;
}  // namespace

std::chrono::milliseconds effective_min_interval(const Destination& destination) {
  if (destination.min_interval) return *destination.min_interval;
  return integration_of(destination).traits().min_interval;
}

std::string peer_name(std::string_view cluster, std::size_t position) {
  return std::string(cluster) + "/" + std::to_string(position);
}

Result<std::string> alertmanager_endpoint(std::string_view url) {
  core::Url parsed = KW_TRY(core::parse_url(url));
  std::string target = parsed.target;
  if (target == "/") target = std::string(kAlertmanagerAlertsPath);
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  return parsed.scheme + "://" + parsed.host + ":" + std::to_string(parsed.port) + target;
}

std::string redact(std::string_view url) {
  auto parsed = core::parse_url(url);
  if (!parsed) return "<invalid url>";
  const bool ipv6 = parsed->host.find(':') != std::string::npos;
  return parsed->scheme + "://" + (ipv6 ? "[" + parsed->host + "]" : parsed->host) + ":" +
         std::to_string(parsed->port);
}

bool refuses_plain_http(const core::Url& url, InsecureHttp insecure_http) {
  return url.scheme == "http" && insecure_http != InsecureHttp::Allow &&
         !is_loopback_host(url.host);
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
  if (const auto type = parse_destination_type(destination.type); !type) {
    return core::fail(type.error().code, where + ": " + type.error().message);
  }
  const Integration& integration = integration_of(destination);
  if (!destination.cluster.empty() && !integration.traits().clusters) {
    return core::fail(ErrorCode::InvalidArgument, where + ": only " +
                                                      types_with(&IntegrationTraits::clusters) +
                                                      " destinations are peers of a cluster");
  }
  if (!destination.secret.empty() && !integration.traits().takes_secret) {
    return core::fail(ErrorCode::InvalidArgument, where + ": only " +
                                                      types_with(&IntegrationTraits::takes_secret) +
                                                      " destinations take a secret");
  }
  const core::Url url = KW_TRY_WITH(core::parse_url(destination.url), where);
  KW_TRY(integration.check(destination, where));
  if (refuses_plain_http(url, destination.insecure_http)) {
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
