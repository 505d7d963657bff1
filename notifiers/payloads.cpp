#include "notifiers/payloads.hpp"

#include "notifiers/integration.hpp"

namespace kernelwatch::notifiers {

std::string format_change(double relative_change) {
  return core::format_change(relative_change);
}

OutgoingRequest build_request(const Destination& destination, const Notification& n,
                              const FormatOptions& options, core::Timestamp now) {
  OutgoingRequest request;
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("User-Agent", "kernelwatch/0.1");
  request.headers.emplace_back("Idempotency-Key", n.idempotency_key);
  integration_of(destination).write(destination, n, options, now, request);
  return request;
}

}  // namespace kernelwatch::notifiers
