// The daemon's HTTP API: health, readiness, metrics, status, keys, runs and alerts, and the
// token-protected runs/trigger/ack endpoints. Handlers run on the engine's thread and read the
// daemon's state through an ApiContext; health checks and pre-rendered pages are answered on
// the HTTP I/O thread from a Published. Composition code.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "core/alert.hpp"
#include "core/record.hpp"
#include "daemon/engine.hpp"
#include "daemon/log.hpp"
#include "daemon/schedule.hpp"
#include "http/http_server.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::notifiers {
class DeliveryWorker;
}

namespace kernelwatch::daemon {

// The HTTP module's request, answer and route: the words every daemon handler is written in.
using http::Access;
using http::HttpRequest;
using http::HttpResponse;
using http::QuickHandler;
using http::Route;

struct DashboardPages;

// The scheduler's state as the API reports it. Touched on the io_context thread only.
struct CycleState {
  bool ready = false;
  bool running = false;
  std::uint64_t count = 0;
  std::uint64_t errors = 0;
  std::uint64_t failed = 0;        // finished cycles with at least one error
  core::Timestamp last_success{};  // end of the last cycle without an error (0: none yet)
  core::Timestamp last_start{};
  core::Timestamp last_end{};
  core::Timestamp next{};
  double last_duration_seconds = 0;
  std::vector<EntryState> entries;  // each config entry's schedule and last execution
  std::map<std::string, std::uint64_t> runs_by_status;  // since start, by outcome
  double run_seconds_sum = 0;                           // medians of passed runs
  std::uint64_t run_seconds_count = 0;

  // Runs by the GPU (or host) they ran on, since start: /metrics' per-GPU series.
  struct PlacedRuns {
    core::Placement placement;
    std::map<std::string, std::uint64_t> by_status;
  };
  std::map<std::string, PlacedRuns> gpus;  // by core::UnitId of the host and GPU

  void count_run(core::RunStatus status, std::chrono::nanoseconds median);
  void count_run(core::RunStatus status, std::chrono::nanoseconds median,
                 const core::Placement& placement);
};

// The serialized per-key part of /api/v1/status, rebuilt only when the engine changed.
struct StatusCache {
  std::uint64_t generation = ~std::uint64_t{0};
  std::string keys;  // the keys array, then ',"protocolChanges":' and its array
};

// One pre-rendered answer (the /metrics or /api/v1/status body): rendered on the engine's thread,
// served from the I/O thread until something it shows changes (invalidate()) or it is older than
// the maximum age (so ages and uptimes stay fresh). Thread-safe.
class RenderedCache {
 public:
  explicit RenderedCache(std::chrono::milliseconds max_age) : max_age_(max_age) {}
  // The body while it is current; null when never rendered, invalidated or too old.
  [[nodiscard]] std::shared_ptr<const std::string> fresh() const;
  // Engine thread: the body rendered from the state as of `epoch` (read before rendering).
  void store(std::shared_ptr<const std::string> body, std::uint64_t epoch);
  [[nodiscard]] std::uint64_t epoch() const;
  void invalidate();

 private:
  std::chrono::milliseconds max_age_;
  mutable std::mutex mutex_;
  std::uint64_t epoch_ = 0;
  std::uint64_t body_epoch_ = 0;
  std::shared_ptr<const std::string> body_;
  std::chrono::steady_clock::time_point rendered_at_{};
};

// What the HTTP I/O thread may read without the engine: readiness, storage health, the
// pre-rendered answers. Thread-safe.
class Published {
 public:
  explicit Published(std::string backend, std::chrono::milliseconds max_age)
      : metrics(max_age), status(max_age), backend_(std::move(backend)) {}

  RenderedCache metrics;
  RenderedCache status;

  void set_ready(bool ready);
  [[nodiscard]] bool ready() const;
  [[nodiscard]] const std::string& backend() const { return backend_; }
  // A write to the database failed (`source`: "outbox of `hook`", "runs"), or succeeded again.
  void storage_failed(const std::string& source, const std::string& reason);
  void storage_recovered(const std::string& source);
  struct StorageProblem {
    std::string source;
    std::string reason;
    std::uint64_t failures = 0;  // failed writes since the daemon started
  };
  [[nodiscard]] std::optional<StorageProblem> storage_problem() const;
  struct StorageFailures {
    std::uint64_t total = 0;  // failed writes since the daemon started
    bool failing = false;     // some part's last write failed
  };
  [[nodiscard]] StorageFailures storage_failures() const;
  // Both answers are stale: a run was stored, a cycle ended, a notification was delivered.
  void invalidate();

 private:
  const std::string backend_;
  mutable std::mutex mutex_;
  bool ready_ = false;
  std::map<std::string, std::string> failing_;  // source -> reason
  std::uint64_t failures_ = 0;
};

struct ApiContext {
  storage::Connection* store = nullptr;
  Engine* engine = nullptr;
  const config::Config* config = nullptr;
  CycleState* cycle = nullptr;
  notifiers::DeliveryWorker* worker = nullptr;  // null without notifiers
  std::string backend;
  std::string backend_note;
  std::chrono::steady_clock::time_point started;
  core::Timestamp started_wall{};
  std::function<bool()> trigger;  // false when a cycle is already running
  // Ends the cycle (a posted batch): decides the held alerts, sends what is due, grouped.
  // Returns what the close decided; nullopt when it failed (logged).
  std::function<std::optional<CycleClose>()> flush;
  StatusCache* status_cache = nullptr;
  // Readiness and storage health: a failed write makes /readyz answer 503 until one succeeds.
  Published* published = nullptr;
  // The daemon's log (never given a secret).
  std::function<void(LogLevel, std::string_view)> log;
};

// An alert as the API shows it: `id` is the short opaque id (core::AlertId::short_form, what ack
// paths, `kernelwatch status` and the dashboard use), `longId` the full one; an incident's id on
// it and on its members is short too.
[[nodiscard]] nlohmann::json api_alert_json(const core::Alert& alert);

// The routes, reading the context through `context()` at each request (it changes on reload);
// handlers run where context() may be called (the engine's thread), quick handlers read only
// `published`. A handler of a mutating route invalidates the pre-rendered answers.
// The dashboard's key and alert pages are made as `pages` says (daemon/dashboard.hpp).
[[nodiscard]] std::vector<Route> make_routes(std::function<ApiContext()> context,
                                             Published& published, DashboardPages pages);

}  // namespace kernelwatch::daemon
