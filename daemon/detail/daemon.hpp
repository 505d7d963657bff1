// The daemon (daemon.hpp's run_daemon): one io_context thread that owns the engine, the store and
// the delivery worker, the benchmark thread that runs each cycle's sources, the HTTP and pages
// threads. Private to daemon/:
//   daemon.cpp        start, the HTTP and pages threads, notifications, reminders, the API
//   daemon_cycle.cpp  the cycle: schedule, run each source (and its confirming reruns), judge,
//                     end the cycle; reload (SIGHUP) and shutdown
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "core/time.hpp"
#include "daemon/api.hpp"
#include "daemon/clock.hpp"
#include "daemon/daemon.hpp"
#include "daemon/dashboard.hpp"
#include "daemon/engine.hpp"
#include "daemon/key_pages.hpp"
#include "daemon/log.hpp"
#include "daemon/schedule.hpp"
#include "http/http_server.hpp"
#include "kernels/harness/bench.hpp"
#include "notifiers/worker.hpp"
#include "runners/producer.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::daemon::detail {

namespace asio = boost::asio;

// Answers already rendered stay current at most this long (ages and uptimes in them move).
inline constexpr std::chrono::milliseconds kRenderedMaxAge{1000};
// The rendered key pages kept (a page with every run of an 8,000-run key charted is 3.8 MB).
inline constexpr std::size_t kKeyPagesMaxBytes = 64 * 1024 * 1024;
// How long a notification request in flight may finish after SIGTERM or a SIGHUP that changed the
// notifiers (its outcome is then recorded: a receiver that answered is never sent it again);
// shutdown() gives up on everything at 9 s, inside systemd's 10 s.
inline constexpr std::chrono::milliseconds kDeliveryDrain{5000};

// The engine's options from a config (its detector settings, notifiers, this host's name).
[[nodiscard]] EngineOptions engine_options(const config::Config& c);
// Whether a reloaded config changes the notifiers: their settings or their secrets (which the
// redacted form does not show).
[[nodiscard]] bool notifiers_differ(const config::Config& fresh, const config::Config& current);
// Hands the heap pages freed by a replay of the whole history back to the system: without it a
// restart over a long history keeps its peak (hundreds of MB) resident for good.
void release_free_memory();

class Daemon {
 public:
  Daemon(DaemonOptions options, config::Config config, storage::Connection store,
         kernels::Backend backend, std::string backend_note)
      : options_(std::move(options)),
        config_(std::move(config)),
        store_(std::move(store)),
        backend_(backend),
        backend_note_(std::move(backend_note)),
        published_(std::string(kernels::to_string(backend)), kRenderedMaxAge),
        engine_(store_, engine_options(config_)),
        signals_(io_, SIGHUP, SIGTERM, SIGINT),
        schedule_timer_(io_),
        watchdog_timer_(io_),
        stop_timer_(io_),
        reminder_timer_(io_),
        started_(std::chrono::steady_clock::now()),
        started_wall_(wall_now()) {}

  int run();

 private:
  core::Status start();
  void wait_signal();
  void schedule_next();
  void start_cycle(std::string reason, bool all);
  void bench_loop();
  bool take_cycle(Plan& plan, int& confirm_reruns);
  void run_case(const PlannedSource& source, bool first, int confirm_reruns);
  bool judge(const std::string& name, const core::Run& run, std::string& key);
  void end_cycle(double seconds);
  void reload();
  void shutdown();
  std::optional<CycleClose> flush_notifications();
  void remind();
  void arm_reminders();
  void wait_for_bench(std::chrono::steady_clock::time_point deadline);
  void ping_watchdog(std::chrono::microseconds interval);
  core::Status start_worker();
  void replace_worker();
  std::vector<Route> routes();
  ApiContext api_context();
  void stop_http_thread();
  void set_pages_options();
  DashboardPages dashboard_pages();

  DaemonOptions options_;
  config::Config config_;
  storage::Connection store_;
  kernels::Backend backend_;
  std::string backend_note_;
  Published published_;  // read by the HTTP thread
  Engine engine_;
  Log log_;
  // The HTTP server's own thread accepts, parses and answers (health checks, pre-rendered
  // pages); handlers run on io_, the engine's thread, which keeps the engine, the store and the
  // worker single-threaded. Declared before io_ so that it outlives what io_ may still hold
  // of a request (a handler queued when the daemon stopped) when io_ is destroyed.
  asio::io_context http_io_;
  std::thread http_thread_;
  // The dashboard's key and alert pages: replayed and rendered on a thread of their own from a
  // read-only connection of their own (WAL: readers never block the engine's writes), kept in
  // key_pages_ until the engine says their key changed. Declared before pages_io_, which may
  // still hold handlers that point at them when it is destroyed.
  KeyPages key_pages_{kKeyPagesMaxBytes};
  std::optional<storage::Connection> pages_store_;
  mutable std::mutex pages_options_mutex_;
  EngineOptions pages_options_;
  asio::io_context pages_io_;
  asio::executor_work_guard<asio::io_context::executor_type> pages_work_{
      asio::make_work_guard(pages_io_)};
  std::thread pages_thread_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer schedule_timer_;
  asio::steady_timer watchdog_timer_;
  asio::steady_timer stop_timer_;
  asio::steady_timer reminder_timer_;
  std::unique_ptr<http::HttpServer> http_;
  std::unique_ptr<notifiers::DeliveryWorker> worker_;
  // io thread: stopped workers whose request in flight may still finish (SIGHUP), and whether
  // the worker stopped by shutdown() has ended.
  int retiring_workers_ = 0;
  bool worker_drained_ = true;
  std::chrono::steady_clock::time_point started_;
  core::Timestamp started_wall_;
  std::mt19937_64 rng_{std::random_device{}()};
  CycleState cycle_;
  // What the running cycle did, for its one log line at the end (io thread only).
  struct CycleTally {
    std::string reason;
    std::uint64_t number = 0;
    std::size_t runs = 0;
    std::size_t errors = 0;
    std::size_t resolved = 0;
    std::map<std::string, std::size_t> verdicts;  // by verdict kind, in name order
  };
  CycleTally tally_;
  StatusCache status_cache_;
  std::chrono::steady_clock::time_point next_prune_{};

  // The benchmark thread: waits for a cycle request, runs the cases, hands each record to the
  // io thread and waits for its verdict (a breach is rerun at once).
  std::thread bench_thread_;
  std::mutex bench_mutex_;
  std::condition_variable bench_wake_;
  bool cycle_requested_ = false;
  Plan cycle_plan_;
  // The newest producer of each source (carry_over); touched under bench_mutex_.
  std::map<std::string, std::shared_ptr<runners::RunProducer>> learned_;
  EntrySchedule schedule_;  // io thread
  runners::GpuSampler sampler_ = runners::nvml_sampler();
  runners::HostProbe host_probe_ = runners::system_host_probe();
  std::string inventory_problem_;  // a fake GPU list that could not be read
  runners::GpuInventory inventory_ = runners::system_gpu_inventory(&inventory_problem_);
  runners::DeviceSamplers device_samplers_ = runners::nvml_device_samplers();
  // Written once at stop: a benchmark program running then is killed at once, with everything
  // it started, instead of holding the stop until the grace period ends.
  StopPipe stop_pipe_;
  int cycle_confirm_reruns_ = 0;  // copied with the plan: reload() replaces config_
  std::atomic<bool> stopping_{false};
  std::atomic<bool> bench_idle_{true};
  bool stopped_ = false;
};

}  // namespace kernelwatch::daemon::detail
