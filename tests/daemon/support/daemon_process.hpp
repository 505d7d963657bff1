// What the daemon e2e tests share: the real kernelwatch daemon as a process (DaemonProcess: CPU
// backend, an ephemeral port, a webhook notifier and a token) and the synthetic posted series
// that step once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::daemon_e2e {

using nlohmann::json;

inline constexpr const char* kToken = "e2e-token-5f1d";

// By default run i of a series is observed i minutes after day_before_now().
using testing::day_before_now;

inline json synthetic_record(int index, std::int64_t median_ns,
                             const std::string& workload = "synthetic-e2e",
                             core::Timestamp series_start = day_before_now(),
                             const std::string& provider = "posted") {
  return testing::posted_record(
      {series_start + std::chrono::minutes(index), median_ns, workload, provider, "e2e-test"});
}

// 1% noise around 1 ms, deterministic.
inline std::int64_t noisy(int i) {
  return 1'000'000 + static_cast<std::int64_t>(10'000 * std::sin(i * 1.7));
}

// Ten runs with 1% noise, then one 30% slower (a step every detector sees), the step observed
// at `step_at`.
inline void add_stepped_series(json& batch, const std::string& workload, core::Timestamp step_at,
                               const std::string& provider = "posted") {
  const core::Timestamp start = step_at - std::chrono::minutes(10);
  for (int i = 0; i < 10; ++i)
    batch.push_back(synthetic_record(i, noisy(i), workload, start, provider));
  batch.push_back(synthetic_record(10, 1'300'000, workload, start, provider));
}

// For each workload: a stepped series whose step was observed ten minutes into the default day.
inline json stepped_batch(std::initializer_list<const char*> workloads) {
  json batch = json::array();
  for (const char* workload : workloads)
    add_stepped_series(batch, workload, day_before_now() + std::chrono::minutes(10));
  return batch;
}

class DaemonProcess {
 public:
  DaemonProcess(const testing::TempDir& dir, const std::string& hook_url,
                const std::string& extra = "")
      : dir_(dir) {
    testing::write_file(dir / "token", std::string(kToken) + "\n");
    testing::write_file(dir / "secret", "hook-secret\n");
    // The config loader refuses secret files that others can read.
    std::filesystem::permissions(
        dir / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    std::filesystem::permissions(
        dir / "secret", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    write_config(hook_url, extra);
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;
  void write_config(const std::string& hook_url, const std::string& benchmarks = "") {
    const json config = {
        {"storage", {{"path", (dir_ / "kw.db").string()}}},
        {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir_ / "token").string()}}},
        {"backend", "cpu"},
        {"schedule", {{"interval", "1h"}, {"jitter", "0s"}, {"run_at_start", true}}},
        {"benchmarks", benchmarks.empty() ? json::array() : json::parse(benchmarks)},
        {"bench", {{"warmup", warmup_}, {"repetitions", "5ms"}}},
        {"notifiers",
         json::array({{{"type", "webhook"},
                       {"name", "hook"},
                       {"url", hook_url},
                       {"secret_file", (dir_ / "secret").string()},
                       {"timeout", "500ms"},
                       {"backoff", {{"base", "50ms"}, {"cap", "200ms"}, {"max_age", "1h"}}}}})}};
    json full = config;
    if (!storage_.is_null()) full["storage"] = storage_;
    if (!detector_.is_null()) full["detector"] = detector_;
    if (!http_.is_null()) full["http"].update(http_);
    testing::write_file(dir_ / "kernelwatch.json", full.dump(2));
  }
  // bench.warmup for the next write_config() (part of the protocol: a new key for each case).
  void set_warmup(std::string warmup) { warmup_ = std::move(warmup); }
  // Detector settings for the next write_config() (the constructor wrote the defaults).
  void set_detector(const std::string& hook_url, json detector) {
    detector_ = std::move(detector);
    write_config(hook_url);
  }
  // The `storage` object for the next write_config() (default: kw.db in the folder).
  void set_storage(const std::string& hook_url, json storage) {
    storage_ = std::move(storage);
    write_config(hook_url);
  }
  // More `http` settings (header_timeout, ...) for the next write_config().
  void set_http(const std::string& hook_url, json http) {
    http_ = std::move(http);
    write_config(hook_url);
  }
  void start() {
    child_.start(dir_ / "kernelwatch.json",
                 dir_ / ("daemon-" + std::to_string(starts_++) + ".log"));
  }
  [[nodiscard]] std::uint16_t port() const { return child_.port(); }
  [[nodiscard]] pid_t pid() const { return child_.pid(); }
  [[nodiscard]] std::string log() const { return child_.log(); }
  void kill_hard() { child_.kill_hard(); }
  void stop() { child_.stop(); }

 private:
  const testing::TempDir& dir_;
  json detector_;
  json storage_;
  std::string warmup_ = "1ms";
  json http_;
  testing::DaemonChild child_;
  int starts_ = 0;
};

}  // namespace kernelwatch::daemon_e2e
