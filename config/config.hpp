// The daemon's configuration: the JSON config file (docs/CONFIG.md) parsed straight into the
// types of the modules it configures (kernels, detectors, notifiers), the loader that validates
// it and resolves its secrets, and the redacted form the daemon logs. Level 3: uses core/, the
// types and name parsers of kernels/, detectors/ and notifiers/, the catalogue of run sources of
// runners/ (every entry is read by its source: kernelwatch's own kernels, an entry without
// `runner`, by runners::HarnessSource), and nlohmann/json.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/environment.hpp"
#include "config/secret.hpp"
#include "core/error.hpp"
#include "core/key.hpp"
#include "core/names.hpp"
#include "detectors/alert_state.hpp"
#include "detectors/parameters.hpp"
#include "kernels/harness/timing.hpp"
#include "kernels/registry.hpp"
#include "kernels/types.hpp"
#include "notifiers/destination.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::config {

using core::Result;

struct StorageConfig {
  std::filesystem::path path = "/var/lib/kernelwatch/kernelwatch.db";  // absolute after loading
  // "": the SQLite file `path` (the embedded default). Else the PostgreSQL database to use
  // instead, as a libpq URL ("postgresql://kw@db.example/kernelwatch?passfile=/etc/...") or a
  // service name from pg_service.conf, kept as the URL "postgresql:///?service=NAME". Never a
  // password: that comes from a password file or PGPASSWORD (storage refuses one in the URL).
  std::string postgresql;
  // "": the database's default schema (its search_path). Else this host's own schema in a
  // database that several daemons share (docs/FLEET.md): [a-z_][a-z0-9_]{0,62}.
  std::string schema;
  // A key new to this host starts from the fleet's newest runs of it in the other hosts' schemas
  // of the same database (docs/FLEET.md, "A new host starts warm"). Needs postgresql and schema.
  bool warm_start = false;
  // A step of this host's key is judged against the other hosts' runs of the key around it: a
  // host that moved alone is one alert about the host (docs/FLEET.md, "Host against host").
  // Needs postgresql and schema.
  bool fleet_controls = false;

  // What storage::Connection::open takes: the file, or the PostgreSQL URL; with a schema, the URL
  // sets it as libpq's own `options=-csearch_path=NAME`, so that `psql` given that URL sees the
  // same tables.
  [[nodiscard]] std::filesystem::path location() const { return location_of(schema); }
  // location() of another host's schema of the same database (warm_start reads them).
  [[nodiscard]] std::filesystem::path location_of(const std::string& name) const {
    if (postgresql.empty()) return path;
    if (name.empty()) return std::filesystem::path(postgresql);
    const char* separator = postgresql.find('?') == std::string::npos                ? "?"
                            : postgresql.ends_with('?') || postgresql.ends_with('&') ? ""
                                                                                     : "&";
    return std::filesystem::path(postgresql + separator + "options=-csearch_path%3D" + name);
  }
};

struct HttpConfig {
  std::string listen = "127.0.0.1:9477";  // as written; host and port are its parts
  std::string host = "127.0.0.1";         // without brackets for IPv6
  std::uint16_t port = 9477;              // 0: any free port (tests)
  std::string token;                      // a secret; "": the mutating endpoints are disabled
  SecretSource token_source;
  std::string public_url;  // base URL alerts link to; "": http://<listen>
  // A client must send a complete request header within this (slowloris defence).
  std::chrono::milliseconds header_timeout{std::chrono::seconds(5)};
  std::size_t max_connections_per_client = 128;  // of the server's 256
};

// Which keys get series of their own in /metrics (each such key adds up to 4 series): every key,
// only keys with a problem (an open alert, a failing key, a breach waiting for its confirmation,
// an inconclusive run), or none. The per-state key counts are always there.
enum class PerKeyMetrics { All, Problems, None };
[[nodiscard]] std::string_view to_string(PerKeyMetrics per_key) noexcept;  // "all", ...

struct MetricsConfig {
  // Problems: a scrape's size follows the keys that need a look, not the thousands watched.
  PerKeyMetrics per_key = PerKeyMetrics::Problems;
};

// Whether the first cycle runs as soon as the daemon is ready or waits one interval.
enum class AtStart { Run, Wait };

struct ScheduleConfig {
  std::chrono::milliseconds interval{std::chrono::minutes(15)};
  std::chrono::milliseconds jitter{0};  // each tick is delayed by a random [0, jitter)
  AtStart at_start = AtStart::Run;      // JSON: run_at_start
};

// A `benchmarks` entry, read by the run source that its `runner` names (kernelwatch's own kernels
// where it has none) into that source's own SourceEntry (`source`): the catalogue of run sources
// (runners/sources.hpp) maps the runner to its reader, and the entry itself gives its name, its
// logged form and its producers (runners/source_entry.hpp). Adding a run source touches its own
// files (runners/<source>*.{hpp, cpp}: runner, reader, SourceEntry), one line in
// runners/sources.cpp, its files in runners/CMakeLists.txt, and docs; nothing here, in config/*.cpp
// or in daemon/.
struct BenchmarkConfig {
  // How often this entry runs; nullopt: schedule.interval.
  std::optional<std::chrono::milliseconds> interval;
  // The entry as its run source read it (never null): kernelwatch's own kernels
  // (runners::HarnessSource, an entry without `runner`), a command entry, a liger-bench entry...
  std::shared_ptr<const runners::SourceEntry> source;

  // Its `runner` ("command"); "" for kernelwatch's own kernels.
  [[nodiscard]] std::string_view runner() const { return source->runner(); }
  // Its name in the schedule, logs and the status, unique in the config: its source's name (a
  // command entry's `name`, "liger-bench tvd/backward", "<kernel>/<pass>" of kernelwatch's own).
  [[nodiscard]] std::string name() const;
  // Its source's entry as `Source` (runners::CommandSource); nullptr when it is another's.
  template <class Source>
  [[nodiscard]] const Source* source_as() const {
    return dynamic_cast<const Source*>(source.get());
  }
};

// The `detector` section: the detectors' own parameters and the daemon's alert knobs. A new
// setting is a field here (or in detectors/parameters.hpp), one line in config.cpp's table of
// detector settings, and one line in docs/CONFIG.md.
struct DetectorSettings {
  detectors::DetectorParameters parameters;  // `confirm` is not configured: the daemon sets it
  detectors::AlertPolicy alert_policy;       // JSON: detector.repeat_interval
  int confirm_reruns = 1;  // 0..5 immediate reruns that must breach the same way before alerting
};

// A `notifiers` entry: the destination with its url and secret resolved, and where those came
// from, which is all that redacted output and messages may show of them.
// An Alertmanager cluster's entry (`urls`) becomes one Notifier per peer, in the order of its
// URLs: the destination `<name>/<n>` of its peer n, with the entry's settings and
// `destination.cluster` = the entry's name (docs/NOTIFICATIONS.md, "Alertmanager cluster").
struct Notifier {
  notifiers::Destination destination;  // JSON `timeout` sets each of its five timeouts
  SecretSource url_source;             // a peer's: where `urls` came from
  SecretSource secret_source;
  std::size_t entry = 0;  // its place in the file's `notifiers` list
  std::size_t peer = 0;   // 1..n: the peer's place in `urls`; 0: not a cluster's peer (`url`)

  // The name the file gives the entry (a peer's cluster), as messages and redacted output say.
  [[nodiscard]] const std::string& configured_name() const {
    return destination.cluster.empty() ? destination.name : destination.cluster;
  }
};

struct Config {
  std::string source;  // the file it came from, for messages
  StorageConfig storage;
  HttpConfig http;
  MetricsConfig metrics;
  std::optional<kernels::Backend> backend;  // nullopt: "auto", CUDA when there is a GPU
  ScheduleConfig schedule;
  std::vector<BenchmarkConfig> benchmarks;  // empty: only posted runs are watched
  kernels::TimingPolicy bench;              // JSON: warmup and repetitions
  DetectorSettings detector;
  std::vector<Notifier> notifiers;
  // Things worth a log line that do not stop the daemon ("http.token_env: environment variable
  // KERNELWATCH_TOKEN is not set; the mutating endpoints are disabled"). Never carry secrets.
  std::vector<std::string> warnings;
};

// Parses and validates a config document and resolves its secrets. `source_name` prefixes every
// message ("kernelwatch.json: schedule.interval: ..."); relative paths (storage.path, *_file,
// ca_file) are taken relative to `base_dir`. Errors: ParseError for malformed JSON or a bad
// duration, InvalidArgument for unknown fields, wrong types and values out of range, NotFound
// for a missing secret file or variable. No message ever contains a secret value or a URL.
// An entry's `runner` is looked up in `sources` (a test registers a source of its own there).
[[nodiscard]] Result<Config> parse_config(
    std::string_view json_text, std::string_view source_name, const Environment& environment,
    const std::filesystem::path& base_dir,
    const runners::SourceCatalogue& sources = runners::source_catalogue());

// Reads the file and parse_config()s it with its path as the source name and its directory as
// the base directory.
[[nodiscard]] Result<Config> load_config(const std::filesystem::path& path,
                                         const Environment& environment = Environment::process());

// The effective config (defaults filled in) in the file's own field names, with every secret
// replaced by "<redacted>" and its source (file, variable) named instead. The daemon logs it.
[[nodiscard]] nlohmann::json redacted_json(const Config& config);

}  // namespace kernelwatch::config
