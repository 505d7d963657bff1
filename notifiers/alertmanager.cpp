// Alertmanager: the API v2 alert array (labels that never change between firing and resolve,
// dcgm-exporter's GPU label names), posted to /api/v2/alerts when the URL is the base; open
// alerts re-sent every resend_interval; the peers of a cluster (`urls`).
#include "notifiers/alert_text.hpp"
#include "notifiers/integration.hpp"

namespace kernelwatch::notifiers {
namespace {

using nlohmann::json;

class AlertmanagerIntegration final : public Integration {
 public:
  std::string_view name() const noexcept override { return "alertmanager"; }
  IntegrationTraits traits() const noexcept override {
    IntegrationTraits t;
    t.resends = true;
    t.clusters = true;
    return t;
  }
  // Alertmanager is documented by its base URL (http://127.0.0.1:9093); its alerts endpoint is
  // /api/v2/alerts. A base URL posted as it is gets 405 and every alert would be a dead letter.
  core::Url endpoint(core::Url url) const override {
    if (url.target == "/") url.target = std::string(kAlertmanagerAlertsPath);
    return url;
  }
  void write(const Destination&, const Notification& n, const FormatOptions& options,
             core::Timestamp now, OutgoingRequest& request) const override {
    request.body = alertmanager_payload(n, options, now).dump();
  }
  std::string permanent_hint(unsigned status) const override {
    if (status == 404 || status == 405) {
      return "an Alertmanager url is its base, http://HOST:9093, or .../api/v2/alerts";
    }
    return {};
  }
};

}  // namespace

json alertmanager_payload(const Notification& n, const FormatOptions& options,
                          std::optional<core::Timestamp> sent_at) {
  json out = json::array();
  for (const auto& item : n.alerts) {
    const core::Alert& a = item.alert;
    std::string alertname = "KernelwatchRegression";
    const bool unit = !a.placement.empty();  // a GPU or a host out of line with its siblings
    if (unit) {
      alertname = a.placement.unit().empty() ? "KernelwatchHostOutlier" : "KernelwatchGpuOutlier";
    } else if (a.kind == AlertKind::Environment) {
      alertname = "KernelwatchEnvironmentShift";
    } else if (a.kind == AlertKind::Failed) {
      alertname = "KernelwatchFailedRun";
    } else if (a.direction == Direction::Improvement) {
      alertname = "KernelwatchImprovement";
    }
    json labels = {{"alertname", alertname},        {"environment", a.key.environment},
                   {"kind", to_string(a.kind)},     {"direction", to_string(a.direction)},
                   {"severity", alert_severity(a)}, {"alert_id", a.id.long_form()}};
    // An incident has no benchmark, provider or workload: no empty labels for them.
    for (const auto& [name, value] : {std::pair{"benchmark", a.key.benchmark},
                                      {"provider", a.key.provider},
                                      {"workload", a.key.workload}}) {
      if (!value.empty()) labels[name] = value;
    }
    if (!n.host.empty()) labels["instance"] = n.host;
    // The GPU's identity under dcgm-exporter's label names, so that Alertmanager inhibit rules
    // and Prometheus joins match DCGM's series of the same GPU (docs/FLEET.md).
    for (const auto& [name, value] : {std::pair{"Hostname", unit ? a.placement.host : n.host},
                                      {"gpu", a.placement.gpu},
                                      {"UUID", a.placement.gpu_uuid},
                                      {"pci_bus_id", a.placement.pci_bus_id}}) {
      if (!value.empty()) labels[name] = value;
    }
    json annotations = {
        {"summary", unit ? a.explanation
                         : headline(item) + ": " + a.key.benchmark + " " + a.key.provider + " " +
                               format_change(a.relative_change)},
        {"description", "median " + core::format_latency(item.run().median) + " (" +
                            format_change(a.relative_change) + "), band " + band_text(a) +
                            " from " + std::to_string(a.baseline_runs) + " runs"},
        {"median_ns", std::to_string(item.run().median.count())},
        {"band_lower_ns", std::to_string(a.band.lower.count())},
        {"band_upper_ns", std::to_string(a.band.upper.count())},
        {"relative_change", format_change(a.relative_change)},
        {"external_id", item.run().external_id},
        {"idempotency_key", n.idempotency_key}};
    if (const auto text = alert_note(a); !text.empty()) annotations["attribution"] = text;
    annotations["kernelwatch_id"] = a.id.short_form();
    if (a.state == core::AlertState::Acknowledged && !resolved(item)) {
      annotations["acknowledged"] = "true";
    }
    json alert = {{"labels", std::move(labels)}, {"annotations", std::move(annotations)}};
    if (resolved(item)) {
      // startsAt is unknown to a resolve message; Alertmanager matches by labels.
      alert["endsAt"] = core::format_timestamp(item.run().observed_at);
    } else {
      alert["startsAt"] = core::format_timestamp(item.run().observed_at);
      alert["endsAt"] = core::format_timestamp(sent_at.value_or(n.created_at) + options.firing_ttl);
    }
    if (const auto link = alert_link(options, item); !link.empty()) alert["generatorURL"] = link;
    out.push_back(std::move(alert));
  }
  return out;
}

const Integration& alertmanager_integration() {
  static const AlertmanagerIntegration integration;
  return integration;
}

}  // namespace kernelwatch::notifiers
