#include "notifiers/destination.hpp"

#include <boost/asio/ip/address.hpp>

#include "core/names.hpp"

namespace kernelwatch::notifiers {
namespace {
using core::ErrorCode;
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
  static constexpr DestinationType kValues[] = {DestinationType::Slack, DestinationType::Webhook,
                                                DestinationType::Alertmanager};
  return core::parse_name("destination type", text, kValues);
}

std::chrono::milliseconds effective_min_interval(const Destination& destination) {
  if (destination.min_interval) return *destination.min_interval;
  return destination.type == DestinationType::Slack ? std::chrono::seconds(1)
                                                    : std::chrono::milliseconds(0);
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
  if (!destination.cluster.empty() && destination.type != DestinationType::Alertmanager) {
    return core::fail(ErrorCode::InvalidArgument,
                      where + ": only Alertmanager destinations are peers of a cluster");
  }
  const core::Url url = KW_TRY_WITH(core::parse_url(destination.url), where);
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
