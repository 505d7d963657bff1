// The daemon's HTTP API: health, readiness, metrics, status, keys, runs and alerts, and the
// token-protected runs/trigger/ack endpoints. Handlers run on the io_context thread and read
// the daemon's state through an ApiContext. Composition code.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/record.hpp"
#include "daemon/engine.hpp"
#include "daemon/http_server.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::notifiers {
class DeliveryWorker;
}

namespace kernelwatch::daemon {

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
  std::map<std::string, std::uint64_t> runs_by_status;  // since start, scheduled and posted
  double run_seconds_sum = 0;                           // medians of passed runs
  std::uint64_t run_seconds_count = 0;

  void count_run(core::RunStatus status, std::chrono::nanoseconds median);
};

// The serialized per-key part of /api/v1/status, rebuilt only when the engine changed.
struct StatusCache {
  std::uint64_t generation = ~std::uint64_t{0};
  std::string keys;  // the keys array, then ',"protocolChanges":' and its array
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
};

// The routes, reading the context through `context()` at each request (it changes on reload).
[[nodiscard]] std::vector<Route> make_routes(std::function<ApiContext()> context);

}  // namespace kernelwatch::daemon
