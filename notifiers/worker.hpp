// The outbox delivery worker: one coroutine per destination on the daemon's io_context, so a
// slow or dead destination never holds up another; paces, retries with backoff and dead-letters
// through storage::Outbox. Alertmanager destinations also re-send the open alerts (read from
// storage::AlertStore) on the same coroutine, between outbox rows, so a re-send never overtakes
// a resolve. The peers of an Alertmanager cluster are destinations of their own; a peer's row
// that another peer took is not owed to it once it is older than the alerts' lifetime. Uses Asio
// (in worker.cpp), the HTTP client and the payload formatters.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/time.hpp"
#include "notifiers/destination.hpp"
#include "notifiers/payloads.hpp"
#include "notifiers/retry.hpp"
#include "storage/connection.hpp"

namespace boost::asio {
class io_context;  // the daemon's event loop; worker.cpp includes Asio
}  // namespace boost::asio

namespace kernelwatch::notifiers {

// Wall-clock source for the timestamps written to the outbox (injected so tests control it).
using Clock = std::function<core::Timestamp()>;
[[nodiscard]] Clock system_clock();

// One finished attempt, reported on the io_context thread (metrics, tests, the drain helper).
struct DeliveryEvent {
  std::string destination;
  std::int64_t row_id = 0;
  std::string idempotency_key;
  Decision::Kind kind = Decision::Kind::Delivered;
  std::string message;  // error or dead-letter reason; never a URL path, query or secret
  std::int64_t attempts = 0;
  core::Timestamp next_attempt_at{};  // RetryAt only
};

struct WorkerOptions {
  FormatOptions format;  // firing_ttl is set per Alertmanager destination (its resend_interval)
  // The Alertmanager `instance` label of re-sends: the host the daemon's notifications name.
  std::string host;
  std::uint64_t jitter_seed = 0;  // 0: seeded from std::random_device
  std::size_t batch_size = 64;    // rows read per query; outcomes commit once per batch
  // Re-read the outbox this often even without wake() (rows enqueued by another process).
  std::chrono::milliseconds poll_interval{std::chrono::seconds(30)};
  std::function<void(const DeliveryEvent&)> on_event;
  // A destination found nothing pending at all (not merely nothing due yet).
  std::function<void(std::string_view destination)> on_idle;
  // Writing to the outbox failed (`error` set: a full disk, a read-only file) or succeeded
  // again after failing (`error` null). The worker retries the write with the destination's
  // backoff and sends nothing meanwhile (no resend storm); the daemon reports it in /readyz.
  std::function<void(std::string_view destination, const core::Error* error)> on_storage;
};

class DeliveryWorker {
 public:
  // Validates every destination and builds its HTTP client (CA files are read here). Names must
  // be unique: outbox rows are keyed by them.
  [[nodiscard]] static core::Result<std::unique_ptr<DeliveryWorker>> create(
      boost::asio::io_context& io, storage::Connection& store,
      std::vector<Destination> destinations, Clock clock, Logger logger,
      WorkerOptions options = {});

  DeliveryWorker(const DeliveryWorker&) = delete;
  DeliveryWorker& operator=(const DeliveryWorker&) = delete;
  ~DeliveryWorker();  // stop()s

  // Spawns the per-destination coroutines. The store is used on the io_context thread only.
  void start();
  // Starts nothing new and cancels every wait. A request already in flight may finish for up to
  // `drain` (then it is cut short, and its row stays pending to be sent again, with the same
  // idempotency key, by whoever runs the outbox next); the outcome of a finished one is recorded,
  // so a receiver that answered is not sent the notification again after a restart. `on_drained`
  // runs on the io_context's thread once every destination's coroutine has ended (at once when
  // none runs). Keep the store alive while the io_context keeps running. Thread-safe; a second
  // call does nothing.
  void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(0),
            std::function<void()> on_drained = {});
  // New rows were enqueued: look now instead of at the next poll. Thread-safe.
  void wake();

  struct Stats {
    std::uint64_t delivered = 0;
    std::uint64_t retried = 0;
    std::uint64_t dead = 0;
    std::uint64_t resent = 0;         // Alertmanager re-sends answered 2xx
    std::uint64_t resend_failed = 0;  // the others (harmless: the next one comes an interval later)
    // Rows of an Alertmanager cluster's peer not sent to it because another peer took them
    // (recorded delivered, with a note saying so; docs/NOTIFICATIONS.md, "Alertmanager cluster").
    std::uint64_t covered = 0;
  };
  [[nodiscard]] Stats stats() const;

  struct State;

 private:
  explicit DeliveryWorker(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace kernelwatch::notifiers
