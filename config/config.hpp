// The daemon's configuration: plain structs for every field of the JSON config file
// (docs/CONFIG.md), the loader that validates it and resolves its secrets, and the redacted
// form the daemon logs. Uses core/, nlohmann/json and the standard library only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/environment.hpp"
#include "config/secret.hpp"
#include "core/error.hpp"
#include "core/key.hpp"

namespace kernelwatch::config {

using core::Result;

struct StorageConfig {
  std::filesystem::path path = "/var/lib/kernelwatch/kernelwatch.db";  // absolute after loading
};

struct HttpConfig {
  std::string listen = "127.0.0.1:9477";  // as written; host and port are its parts
  std::string host = "127.0.0.1";         // without brackets for IPv6
  std::uint16_t port = 9477;              // 0: any free port (tests)
  std::string token;                      // a secret; "": the mutating endpoints are disabled
  SecretSource token_source;
  std::string public_url;  // base URL alerts link to; "": http://<listen>
};

enum class Backend { Auto, Cuda, Cpu };

// Whether the first cycle runs as soon as the daemon is ready or waits one interval.
enum class AtStart { Run, Wait };

struct ScheduleConfig {
  std::chrono::milliseconds interval{std::chrono::minutes(15)};
  std::chrono::milliseconds jitter{0};  // each tick is delayed by a random [0, jitter)
  AtStart at_start = AtStart::Run;      // JSON: run_at_start
};

enum class Pass { Forward, Backward, Full };
enum class Provider { Fused, Reference };

struct BenchmarkConfig {
  core::KernelKind kernel = core::KernelKind::LayerNorm;  // LayerNorm or Tvd
  Pass pass = Pass::Forward;
  std::vector<Provider> providers;        // default both, fused first
  std::vector<core::Workload> workloads;  // at least one, each of `kernel`
};

struct BenchTiming {
  std::chrono::milliseconds warmup{25};
  std::chrono::milliseconds repetitions{100};  // of timed kernel time
};

// Mirrors detectors::DetectorParameters (same defaults) plus the daemon's alert knobs.
struct DetectorConfig {
  std::size_t window = 20;
  std::size_t min_history = 5;
  std::size_t big_step_min_history = 2;
  double big_step_threshold = 0.20;
  double min_relative_margin = 0.02;
  double spread_factor = 3.0;
  int confirm_reruns = 1;  // 0..5 immediate reruns that must breach the same way before alerting
  std::chrono::milliseconds repeat_interval{std::chrono::hours(24)};  // 0: never repeat
  struct Drift {
    std::size_t window = 20;
    std::size_t min_runs = 10;
    double z_threshold = 4.0;
    double min_total_change = 0.025;
  } drift;
  struct Controls {
    std::vector<std::string> reference_providers = {"kernelwatch-reference", "torch",
                                                    "huggingface"};
    std::chrono::milliseconds cycle_gap{std::chrono::hours(1)};
    double environment_fraction = 0.5;
    std::size_t environment_min_keys = 3;
  } controls;
};

enum class NotifierType { Slack, Webhook, Alertmanager };

// Plain http:// to a host other than loopback is refused unless the config allows it.
enum class InsecureHttp { Refuse, Allow };

// Mirrors notifiers::Destination (same defaults); url and secret are already resolved.
struct NotifierConfig {
  NotifierType type = NotifierType::Webhook;
  std::string name;  // default "<type>-<index>", e.g. "slack-0"; outbox rows are keyed by it
  std::string url;   // a secret: never log it
  SecretSource url_source;
  std::string secret;  // webhook HMAC key; "": unsigned
  SecretSource secret_source;
  std::filesystem::path ca_file;                                // "": the system store
  InsecureHttp insecure_http = InsecureHttp::Refuse;            // JSON: allow_insecure_http
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // each of resolve .. read
  std::optional<std::chrono::milliseconds> min_interval;        // nullopt: 1 s Slack, else 0
  struct Backoff {
    std::chrono::milliseconds base{std::chrono::seconds(2)};
    std::chrono::milliseconds cap{std::chrono::minutes(10)};
    std::chrono::milliseconds max_age{std::chrono::hours(24)};
  } backoff;
};

struct Config {
  std::string source;  // the file it came from, for messages
  StorageConfig storage;
  HttpConfig http;
  Backend backend = Backend::Auto;
  ScheduleConfig schedule;
  std::vector<BenchmarkConfig> benchmarks;  // empty: only posted runs are watched
  BenchTiming bench;
  DetectorConfig detector;
  std::vector<NotifierConfig> notifiers;
  // Things worth a log line that do not stop the daemon ("http.token_env: environment variable
  // KERNELWATCH_TOKEN is not set; the mutating endpoints are disabled"). Never carry secrets.
  std::vector<std::string> warnings;
};

[[nodiscard]] std::string_view to_string(Backend backend) noexcept;    // "auto"
[[nodiscard]] std::string_view to_string(Pass pass) noexcept;          // "backward"
[[nodiscard]] std::string_view to_string(Provider provider) noexcept;  // "kernelwatch-fused"
[[nodiscard]] std::string_view to_string(NotifierType type) noexcept;  // "slack"
[[nodiscard]] std::string_view kernel_name(core::KernelKind kernel) noexcept;  // "layer_norm"

// Parses and validates a config document and resolves its secrets. `source_name` prefixes every
// message ("kernelwatch.json: schedule.interval: ..."); relative paths (storage.path, *_file,
// ca_file) are taken relative to `base_dir`. Errors: ParseError for malformed JSON or a bad
// duration, InvalidArgument for unknown fields, wrong types and values out of range, NotFound
// for a missing secret file or variable. No message ever contains a secret value or a URL.
[[nodiscard]] Result<Config> parse_config(std::string_view json_text, std::string_view source_name,
                                          const Environment& environment,
                                          const std::filesystem::path& base_dir);

// Reads the file and parse_config()s it with its path as the source name and its directory as
// the base directory.
[[nodiscard]] Result<Config> load_config(const std::filesystem::path& path,
                                         const Environment& environment = Environment::process());

// The effective config (defaults filled in) in the file's own field names, with every secret
// replaced by "<redacted>" and its source (file, variable) named instead. The daemon logs it.
[[nodiscard]] nlohmann::json redacted_json(const Config& config);

}  // namespace kernelwatch::config
