// Notifications as a part of the daemon (detail/daemon.hpp): the outbox's delivery worker (none
// without notifiers), replaced when SIGHUP changes the notifiers; the close of a cycle or posted
// batch (its alerts decided, their notifications queued, the worker woken); reminders of firing
// alerts and the hourly prune of delivered rows. io thread only (the engine's). Private to
// daemon/.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "core/error.hpp"
#include "daemon/api.hpp"
#include "daemon/engine.hpp"
#include "daemon/log.hpp"
#include "notifiers/worker.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::daemon::detail {

// How long a notification request in flight may finish after SIGTERM or a SIGHUP that changed the
// notifiers (its outcome is then recorded: a receiver that answered is never sent it again);
// shutdown() gives up on everything at 9 s, inside systemd's 10 s.
inline constexpr std::chrono::milliseconds kDeliveryDrain{5000};

// What delivery works with, all owned by the daemon: its io_context (the engine's thread), its
// config (replaced in place by SIGHUP), store, engine, published answers, log, and the cycle's
// state (a running cycle sends what is due at its end).
struct DeliveryParts {
  boost::asio::io_context& io;
  const config::Config& config;
  storage::Connection& store;
  Engine& engine;
  Published& published;
  Log& log;
  const CycleState& cycle;
};

class Delivery {
 public:
  explicit Delivery(DeliveryParts parts) : parts_(parts), reminder_timer_(parts.io) {}
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  // Turns the outbox rows of removed destinations into dead letters and starts the worker of the
  // configured notifiers (none without notifiers).
  [[nodiscard]] core::Status start();
  // SIGHUP changed the notifiers: the old worker drains, then a new one starts.
  void replace();
  // Ends the cycle (or posted batch): decides its held alerts, queues what is due and wakes the
  // worker. Returns what the close decided; nullopt when it failed (logged).
  std::optional<CycleClose> flush();
  // Reminders of firing, unacknowledged alerts that are due, and the hourly outbox prune; then
  // arms the reminder timer.
  void remind();
  // The daemon stops: no more reminders; the worker's request in flight may finish.
  void stop();
  // Whether the stopped worker and every retiring one have ended.
  [[nodiscard]] bool idle() const { return drained_ && retiring_ == 0; }
  [[nodiscard]] notifiers::DeliveryWorker* worker() const { return worker_.get(); }

 private:
  void arm_reminders();

  DeliveryParts parts_;
  boost::asio::steady_timer reminder_timer_;
  std::unique_ptr<notifiers::DeliveryWorker> worker_;
  // Stopped workers whose request in flight may still finish (SIGHUP), and whether the worker
  // stopped by stop() has ended.
  int retiring_ = 0;
  bool drained_ = true;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point next_prune_{};
};

}  // namespace kernelwatch::daemon::detail
