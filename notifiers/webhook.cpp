// The generic webhook: kernelwatch's own JSON body (schema in docs/NOTIFICATIONS.md), signed
// with HMAC-SHA256 when the destination has a secret (X-Kernelwatch-Timestamp and
// X-Kernelwatch-Signature over "timestamp.body").
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <charconv>

#include "core/error.hpp"
#include "notifiers/alert_text.hpp"
#include "notifiers/integration.hpp"

namespace kernelwatch::notifiers {
namespace {

using nlohmann::json;

std::string to_hex(const unsigned char* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 0x0f];
  }
  return out;
}

// An environment incident's member keys, each with the move it showed.
json members_json(const core::Alert& a) {
  json members = json::array();
  for (const auto& m : a.members) {
    members.push_back({{"key",
                        {{"benchmark", m.key.benchmark},
                         {"provider", m.key.provider},
                         {"workload", m.key.workload},
                         {"environment", m.key.environment}}},
                       {"medianNs", m.fired.median.count()},
                       {"relativeChange", m.relative_change},
                       {"externalId", m.fired.external_id},
                       {"explanation", m.explanation}});
  }
  return members;
}

json alert_json(const NotifiedAlert& n) {
  const core::Alert& a = n.alert;
  // `id` is the long id (what the webhook has always carried, the receiver's key for an alert);
  // `shortId` the one the API, `kernelwatch ack` and the dashboard take (AlertId::short_form).
  json alert{{"id", a.id.long_form()},
             {"shortId", a.id.short_form()},
             {"state", core::to_string(n.notice)},
             {"kind", to_string(a.kind)},
             {"direction", to_string(a.direction)},
             {"severity", notice_severity(n)},
             {"key",
              {{"benchmark", a.key.benchmark},
               {"provider", a.key.provider},
               {"workload", a.key.workload},
               {"environment", a.key.environment}}},
             {"medianNs", n.run().median.count()},
             {"band", {{"lowerNs", a.band.lower.count()}, {"upperNs", a.band.upper.count()}}},
             {"relativeChange", a.relative_change},
             {"baselineRuns", a.baseline_runs},
             {"attribution", alert_note(a)},
             {"externalId", n.run().external_id},
             {"observedAt", core::format_timestamp(n.run().observed_at)},
             {"members", members_json(a)}};
  // A GPU or host alert says which one, under the run labels' names (docs/NOTIFICATIONS.md).
  if (!a.placement.empty()) {
    json where = json::object();
    for (const auto& [name, value] : {std::pair{"host", &a.placement.host},
                                      {"gpuIndex", &a.placement.gpu},
                                      {"gpuUuid", &a.placement.gpu_uuid},
                                      {"pciBusId", &a.placement.pci_bus_id}}) {
      if (!value->empty()) where[name] = *value;
    }
    alert["placement"] = std::move(where);
  }
  return alert;
}

class WebhookIntegration final : public Integration {
 public:
  std::string_view name() const noexcept override { return "webhook"; }
  IntegrationTraits traits() const noexcept override {
    IntegrationTraits t;
    t.takes_secret = true;
    t.secret_use = "signed";
    return t;
  }
  void write(const Destination& destination, const Notification& n, const FormatOptions&,
             core::Timestamp now, OutgoingRequest& request) const override {
    request.body = webhook_payload(n).dump();
    if (destination.secret.empty()) return;
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    const std::string timestamp = std::to_string(seconds);
    request.headers.emplace_back("X-Kernelwatch-Timestamp", timestamp);
    request.headers.emplace_back("X-Kernelwatch-Signature",
                                 webhook_signature(destination.secret, timestamp, request.body));
  }
};

}  // namespace

json webhook_payload(const Notification& n) {
  json alerts = json::array();
  json runs = json::array();
  for (const auto& item : n.alerts) {
    alerts.push_back(alert_json(item));
    if (!item.run_record.is_null()) runs.push_back(item.run_record);
  }
  return json{{"version", kWebhookSchemaVersion},
              {"type", "kernelwatch.alerts"},
              {"idempotencyKey", n.idempotency_key},
              {"createdAt", core::format_timestamp(n.created_at)},
              {"host", n.host},
              {"summary", summary_line(n)},
              {"alerts", std::move(alerts)},
              {"runs", std::move(runs)}};
}

std::string webhook_signature(std::string_view secret, std::string_view timestamp,
                              std::string_view body) {
  std::string message;
  message.reserve(timestamp.size() + 1 + body.size());
  message.append(timestamp).append(".").append(body);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  const unsigned char* ok = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                                 reinterpret_cast<const unsigned char*>(message.data()),
                                 message.size(), digest.data(), &size);
  KW_ASSERT(ok != nullptr, "HMAC-SHA256 cannot fail on valid input");
  return "sha256=" + to_hex(digest.data(), size);
}

SignatureCheck verify_webhook_signature(std::string_view secret, std::string_view timestamp_header,
                                        std::string_view signature_header, std::string_view body,
                                        core::Timestamp now, std::chrono::seconds tolerance) {
  if (timestamp_header.empty() || signature_header.empty()) return SignatureCheck::Missing;
  long long seconds = 0;
  auto [end, ec] = std::from_chars(timestamp_header.data(),
                                   timestamp_header.data() + timestamp_header.size(), seconds);
  if (ec != std::errc() || end != timestamp_header.data() + timestamp_header.size()) {
    return SignatureCheck::Mismatch;
  }
  const std::string expected = webhook_signature(secret, timestamp_header, body);
  if (expected.size() != signature_header.size() ||
      CRYPTO_memcmp(expected.data(), signature_header.data(), expected.size()) != 0) {
    return SignatureCheck::Mismatch;
  }
  const auto sent = core::Timestamp(std::chrono::seconds(seconds));
  const auto skew = now > sent ? now - sent : sent - now;
  if (skew > tolerance) return SignatureCheck::Stale;
  return SignatureCheck::Valid;
}

const Integration& webhook_integration() {
  static const WebhookIntegration integration;
  return integration;
}

}  // namespace kernelwatch::notifiers
