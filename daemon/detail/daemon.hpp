// The daemon (daemon.hpp's run_daemon) as a composition of parts with one job each, on an
// io_context thread that owns the engine, the store and the delivery worker. Private to daemon/:
//   daemon.cpp             the composition root: start, signals, reload (SIGHUP), shutdown,
//                          the watchdog, the API's context
//   cycle_runner.cpp       the cycles: schedule, the benchmark thread that runs each source (and
//                          its confirming reruns), judging, the cycle's end (detail/cycle_runner)
//   delivery.cpp           the delivery worker, the cycle's close, reminders (detail/delivery)
//   key_pages_service.cpp  the dashboard's pages thread and its own connection
//                          (detail/key_pages_service)
//   http_front.cpp         the HTTP server (http/) on its thread, Published (detail/http_front)
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "core/error.hpp"
#include "core/time.hpp"
#include "daemon/api.hpp"
#include "daemon/clock.hpp"
#include "daemon/daemon.hpp"
#include "daemon/detail/cycle_runner.hpp"
#include "daemon/detail/delivery.hpp"
#include "daemon/detail/http_front.hpp"
#include "daemon/detail/key_pages_service.hpp"
#include "daemon/engine.hpp"
#include "daemon/log.hpp"
#include "kernels/types.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::daemon::detail {

namespace asio = boost::asio;

// The engine's options from a config (its detector settings, notifiers, this host's name).
[[nodiscard]] EngineOptions engine_options(const config::Config& c);
// Whether a reloaded config changes the notifiers: their settings or their secrets (which the
// redacted form does not show).
[[nodiscard]] bool notifiers_differ(const config::Config& fresh, const config::Config& current);
// Hands the heap pages freed by a replay of the whole history back to the system: without it a
// restart over a long history keeps its peak (hundreds of MB) resident for good.
void release_free_memory();

// The composition root: wires the parts, each of which owns its state, and keeps what they share
// (the config, the store, the engine, the log, the engine's io_context) and what no part owns
// (signals, the watchdog, the stop, the API's context).
class Daemon {
 public:
  Daemon(DaemonOptions options, config::Config config, storage::Connection store,
         kernels::Backend backend, std::string backend_note)
      : options_(std::move(options)),
        config_(std::move(config)),
        store_(std::move(store)),
        backend_(backend),
        backend_note_(std::move(backend_note)),
        engine_(store_, engine_options(config_)),
        front_(std::string(kernels::to_string(backend))),
        signals_(io_, SIGHUP, SIGTERM, SIGINT),
        watchdog_timer_(io_),
        stop_timer_(io_),
        cycles_({io_, config_, backend_, engine_, front_.published(), log_,
                 [this] { return delivery_.flush(); }}),
        delivery_({io_, config_, store_, engine_, front_.published(), log_, cycles_.state()}),
        started_(std::chrono::steady_clock::now()),
        started_wall_(wall_now()) {}

  int run();

 private:
  core::Status start();
  void wait_signal();
  void reload();
  void shutdown();
  void wait_for_parts(std::chrono::steady_clock::time_point deadline);
  void ping_watchdog(std::chrono::microseconds interval);
  void stop_threads();
  std::vector<Route> routes();
  ApiContext api_context();

  DaemonOptions options_;
  config::Config config_;
  storage::Connection store_;
  kernels::Backend backend_;
  std::string backend_note_;
  Engine engine_;
  Log log_;
  // The parts with threads of their own come before io_, the engine's io_context, and so
  // outlive it: a handler io_ still holds when it is destroyed (one queued when the daemon
  // stopped) may point at what they own. The engine, the store and the delivery worker are
  // single-threaded on io_: every handler that touches them runs there.
  HttpFront front_;
  KeyPagesService pages_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer watchdog_timer_;
  asio::steady_timer stop_timer_;
  CycleRunner cycles_;
  Delivery delivery_;
  std::chrono::steady_clock::time_point started_;
  core::Timestamp started_wall_;
  StatusCache status_cache_;
  bool stopped_ = false;  // io thread
};

}  // namespace kernelwatch::daemon::detail
