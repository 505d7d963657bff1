#include "daemon/metrics.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "daemon/clock.hpp"
#include "notifiers/worker.hpp"
#include "storage/alerts.hpp"
#include "storage/outbox.hpp"
#include "storage/run_store.hpp"

#ifndef KERNELWATCH_VERSION
#define KERNELWATCH_VERSION "0.0.0-dev"
#endif

namespace kernelwatch::daemon {
namespace {

using http::MetricLabels;
using http::MetricType;
using http::PrometheusText;

double seconds(std::chrono::nanoseconds ns) {
  return std::chrono::duration<double>(ns).count();
}

double unix_seconds(core::Timestamp t) {
  return seconds(t.time_since_epoch());
}

// The four readable parts, the protocol, and the key's digest (its first 16 hex digits, after
// "sha256:"): two keys that differ only in their protocol (a changed bench.repetitions) never
// share a label set.
MetricLabels key_labels(const detectors::KeyLabels& k) {
  const std::string identity = k.identity();
  std::string_view digest = identity;
  if (digest.starts_with("sha256:")) digest.remove_prefix(7);
  return {{"benchmark", k.benchmark}, {"provider", k.provider},
          {"workload", k.workload},   {"environment", k.environment},
          {"protocol", k.protocol},   {"key", std::string(digest.substr(0, 16))}};
}

// A key's state, as `kernelwatch status` names it (worst first); the first five are problems.
enum class KeyState {
  Firing,
  Failing,
  Regression,
  Acknowledged,
  Inconclusive,
  InBand,
  Improvement,
  InsufficientData
};
constexpr std::array<std::string_view, 8> kKeyStates{
    "firing",       "failing", "regression",  "acknowledged",
    "inconclusive", "in_band", "improvement", "insufficient_data"};

bool is_problem(KeyState state) {
  return state <= KeyState::Inconclusive;
}

KeyState key_state(const Engine::KeyView& s) {
  if (*s.open_failed_alert) return KeyState::Failing;
  if (const auto& open = *s.open_alert) {
    return open->state == core::AlertState::Acknowledged ? KeyState::Acknowledged
                                                         : KeyState::Firing;
  }
  if (*s.last_run && core::is_failure((*s.last_run)->status)) return KeyState::Failing;
  switch (s.last_verdict->kind) {
    case detectors::VerdictKind::Regression:
      return KeyState::Regression;
    case detectors::VerdictKind::Inconclusive:
      return KeyState::Inconclusive;
    case detectors::VerdictKind::Improvement:
      return KeyState::Improvement;
    case detectors::VerdictKind::InBand:
      return KeyState::InBand;
    case detectors::VerdictKind::InsufficientData:
      break;
  }
  return KeyState::InsufficientData;
}

// The daemon's own: build, uptime, runs, cycles and storage writes.
void add_process_metrics(PrometheusText& text, const ApiContext& c) {
  text.family("kernelwatch_build_info", MetricType::Gauge, "Build of this kernelwatch: always 1")
      .sample({{"version", KERNELWATCH_VERSION}, {"backend", c.backend}}, 1);
  text.family("kernelwatch_uptime_seconds", MetricType::Gauge, "Seconds since the daemon started")
      .sample(std::chrono::duration<double>(std::chrono::steady_clock::now() - c.started).count());
  // The standard name (client libraries export it): `time() - process_start_time_seconds`,
  // and `changes(process_start_time_seconds[1h])` counts restarts.
  text.family("process_start_time_seconds", MetricType::Gauge,
              "Start time of the process since the Unix epoch in seconds")
      .sample(unix_seconds(c.started_wall));

  auto& runs = text.family("kernelwatch_runs_total", MetricType::Counter,
                           "Runs stored since start (scheduled and posted), by status");
  for (const char* status : {"passed", "failed", "inconclusive"}) {
    const auto it = c.cycle->runs_by_status.find(status);
    runs.sample({{"status", status}},
                it == c.cycle->runs_by_status.end() ? 0.0 : static_cast<double>(it->second));
  }
  // One histogram family (only the +Inf bucket): _sum and _count typed as counters of their own
  // fail `promtool check metrics`.
  text.family("kernelwatch_run_median_seconds", MetricType::Histogram,
              "Medians of the passed runs since start")
      .histogram({}, {}, c.cycle->run_seconds_sum, c.cycle->run_seconds_count);
  text.family("kernelwatch_cycles_total", MetricType::Counter, "Benchmark cycles started")
      .sample(static_cast<double>(c.cycle->count));
  text.family("kernelwatch_cycle_errors_total", MetricType::Counter,
              "Cases that could not run or be stored")
      .sample(static_cast<double>(c.cycle->errors));
  text.family("kernelwatch_cycles_failed_total", MetricType::Counter,
              "Finished cycles in which at least one case could not run or be stored")
      .sample(static_cast<double>(c.cycle->failed));
  text.family("kernelwatch_last_successful_cycle_timestamp_seconds", MetricType::Gauge,
              "End of the last cycle without an error, Unix seconds; 0 before the first one")
      .sample(unix_seconds(c.cycle->last_success));
  text.family("kernelwatch_unreadable_stored_runs", MetricType::Gauge,
              "Stored runs that cannot be read and are left out of detection and answers")
      .sample(static_cast<double>(storage::RunStore(*c.store).unreadable().size()));
  // Writes to the database that failed (a full disk): runs of a cycle or a POST, outbox marks.
  const auto failures =
      c.published != nullptr ? c.published->storage_failures() : Published::StorageFailures{};
  text.family("kernelwatch_storage_write_failures_total", MetricType::Counter,
              "Writes to the database that failed since start (runs, alerts, the outbox)")
      .sample(static_cast<double>(failures.total));
  text.family("kernelwatch_storage_writes_failing", MetricType::Gauge,
              "1 while the last write of some part failed (/readyz answers 503 meanwhile)")
      .sample(failures.failing ? 1.0 : 0.0);
  text.family("kernelwatch_cycle_duration_seconds", MetricType::Gauge,
              "Wall time of the last finished cycle")
      .sample(c.cycle->last_duration_seconds);
}

void add_key_metrics(PrometheusText& text, const ApiContext& c) {
  // Every key counts in its state; only the keys metrics.per_key selects get series of their
  // own (up to 4 each), so that a scrape of thousands of keys stays small.
  const auto per_key = c.config->metrics.per_key;
  auto& median = text.family("kernelwatch_key_median_seconds", MetricType::Gauge,
                             "Median of each key's newest run (keys chosen by metrics.per_key)");
  auto& lower = text.family("kernelwatch_key_band_lower_seconds", MetricType::Gauge,
                            "Lower edge of each key's band (keys chosen by metrics.per_key)");
  auto& upper = text.family("kernelwatch_key_band_upper_seconds", MetricType::Gauge,
                            "Upper edge of each key's band (keys chosen by metrics.per_key)");
  auto& open = text.family("kernelwatch_key_alert_open", MetricType::Gauge,
                           "1 when the key has an open alert (keys chosen by metrics.per_key)");
  std::array<std::size_t, kKeyStates.size()> by_state{};
  c.engine->for_each_key([&](const Engine::KeyView& s) {
    const KeyState state = key_state(s);
    ++by_state[static_cast<std::size_t>(state)];
    if (per_key == config::PerKeyMetrics::None ||
        (per_key == config::PerKeyMetrics::Problems && !is_problem(state))) {
      return;
    }
    const MetricLabels labels = key_labels(*s.key);
    const auto& last_run = *s.last_run;
    if (last_run && last_run->median.count() > 0) median.sample(labels, seconds(last_run->median));
    const auto& verdict = *s.last_verdict;
    if (verdict.has_band) {
      lower.sample(labels, seconds(verdict.band.lower));
      upper.sample(labels, seconds(verdict.band.upper));
    }
    open.sample(labels, *s.open_alert || *s.open_failed_alert ? 1.0 : 0.0);
  });
  auto& keys = text.family("kernelwatch_keys", MetricType::Gauge,
                           "Keys by state, as kernelwatch status counts them");
  for (std::size_t i = 0; i < kKeyStates.size(); ++i) {
    keys.sample({{"state", std::string(kKeyStates[i])}}, static_cast<double>(by_state[i]));
  }
}

void add_gpu_metrics(PrometheusText& text, const ApiContext& c) {
  // Per GPU, under dcgm-exporter's label names (Hostname, gpu, UUID, pci_bus_id), so that
  // Prometheus joins them with DCGM's series of the same GPU.
  const auto gpu_labels = [](const core::Placement& p) {
    MetricLabels labels;
    for (const auto& [name, value] : {std::pair{"Hostname", p.host},
                                      {"gpu", p.gpu},
                                      {"UUID", p.gpu_uuid},
                                      {"pci_bus_id", p.pci_bus_id}}) {
      if (!value.empty()) labels.emplace_back(name, value);
    }
    return labels;
  };
  auto& gpu_runs = text.family("kernelwatch_gpu_runs_total", MetricType::Counter,
                               "Runs stored since start by the GPU they ran on and outcome");
  for (const auto& [id, gpu] : c.cycle->gpus) {
    for (const auto& [status, count] : gpu.by_status) {
      auto labels = gpu_labels(gpu.placement);
      labels.emplace_back("status", status);
      gpu_runs.sample(labels, static_cast<double>(count));
    }
  }
  auto& out_of_line =
      text.family("kernelwatch_gpu_out_of_line", MetricType::Gauge,
                  "1 while an alert says this GPU is out of line with its siblings (firing or "
                  "acknowledged); its relative change in kernelwatch_gpu_out_of_line_change");
  auto& out_change = text.family("kernelwatch_gpu_out_of_line_change", MetricType::Gauge,
                                 "How far the GPU is from its siblings (0.12 = 12% slower)");
  for (const auto state : {core::AlertState::Firing, core::AlertState::Acknowledged}) {
    auto rows = storage::AlertStore(*c.store).list(state, 0);
    if (!rows) continue;
    for (const auto& row : *rows) {
      const auto& p = row.alert.placement;
      if (p.unit().empty()) continue;
      out_of_line.sample(gpu_labels(p), 1.0);
      out_change.sample(gpu_labels(p), row.alert.relative_change);
    }
  }
}

// Alerts by state, the outbox and the deliveries.
void add_delivery_metrics(PrometheusText& text, const ApiContext& c) {
  auto& alerts = text.family("kernelwatch_alerts", MetricType::Gauge, "Stored alerts by state");
  for (const auto state : {core::AlertState::Firing, core::AlertState::Acknowledged,
                           core::AlertState::Resolved, core::AlertState::Rebaselined}) {
    auto count = storage::AlertStore(*c.store).count_by_state(state);
    alerts.sample({{"state", std::string(core::to_string(state))}},
                  count ? static_cast<double>(*count) : 0.0);
  }
  auto& depth = text.family("kernelwatch_outbox_notifications", MetricType::Gauge,
                            "Notifications in the outbox by destination and state");
  if (auto counts = storage::Outbox(*c.store).counts()) {
    for (const auto& d : *counts) {
      depth.sample({{"destination", d.destination}, {"state", "pending"}},
                   static_cast<double>(d.pending));
      depth.sample({{"destination", d.destination}, {"state", "delivered"}},
                   static_cast<double>(d.delivered));
      depth.sample({{"destination", d.destination}, {"state", "dead"}},
                   static_cast<double>(d.dead));
    }
  }
  // How long the oldest undelivered notification has waited, per configured destination (0
  // when nothing is pending): a stuck destination shows as a growing age.
  auto& age = text.family("kernelwatch_outbox_oldest_pending_age_seconds", MetricType::Gauge,
                          "Age of the oldest pending notification by destination; 0 when none");
  {
    std::map<std::string, double> ages;
    for (const auto& n : c.config->notifiers) ages[n.destination.name] = 0;
    if (auto counts = storage::Outbox(*c.store).counts()) {
      const core::Timestamp now = wall_now();
      for (const auto& d : *counts) {
        if (!d.oldest_pending) continue;
        ages[d.destination] = std::max(0.0, seconds(now - *d.oldest_pending));
      }
    }
    for (const auto& [destination, value] : ages) age.sample({{"destination", destination}}, value);
  }
  auto& deliveries = text.family("kernelwatch_deliveries_total", MetricType::Counter,
                                 "Delivery attempts since start by result");
  const auto stats = c.worker != nullptr ? c.worker->stats() : notifiers::DeliveryWorker::Stats{};
  deliveries.sample({{"result", "delivered"}}, static_cast<double>(stats.delivered));
  deliveries.sample({{"result", "retried"}}, static_cast<double>(stats.retried));
  deliveries.sample({{"result", "dead"}}, static_cast<double>(stats.dead));
  auto& resends =
      text.family("kernelwatch_alertmanager_resends_total", MetricType::Counter,
                  "Re-sends of the active alerts to Alertmanager since start by result");
  resends.sample({{"result", "delivered"}}, static_cast<double>(stats.resent));
  resends.sample({{"result", "failed"}}, static_cast<double>(stats.resend_failed));
}

}  // namespace

core::Result<std::string> render_metrics(const ApiContext& c) {
  PrometheusText text;
  add_process_metrics(text, c);
  add_key_metrics(text, c);
  add_gpu_metrics(text, c);
  add_delivery_metrics(text, c);
  return text.render();
}

}  // namespace kernelwatch::daemon
