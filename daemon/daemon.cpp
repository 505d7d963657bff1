#include "daemon/daemon.hpp"

#include <fcntl.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "core/digest.hpp"
#include "core/time.hpp"
#include "daemon/api.hpp"
#include "daemon/clock.hpp"
#include "daemon/dashboard.hpp"
#include "daemon/engine.hpp"
#include "daemon/http_server.hpp"
#include "daemon/key_pages.hpp"
#include "daemon/log.hpp"
#include "daemon/schedule.hpp"
#include "daemon/systemd.hpp"
#include "kernels/harness/bench.hpp"
#include "notifiers/worker.hpp"
#include "runners/producer.hpp"
#include "storage/outbox.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::daemon {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "kernelwatch";
  return buffer;
}

EngineOptions engine_options(const config::Config& c) {
  EngineOptions o;
  o.parameters = c.detector.parameters;
  o.policy = c.detector.alert_policy;
  o.confirm_reruns = c.detector.confirm_reruns;
  for (const auto& n : c.notifiers) o.destinations.push_back(n.destination.name);
  o.host = host_name();
  return o;
}

// Whether a reloaded config changes the notifiers: their settings or their secrets (which the
// redacted form does not show).
bool notifiers_differ(const config::Config& fresh, const config::Config& current) {
  if (config::redacted_json(fresh)["notifiers"] != config::redacted_json(current)["notifiers"] ||
      fresh.notifiers.size() != current.notifiers.size()) {
    return true;
  }
  for (std::size_t i = 0; i < fresh.notifiers.size(); ++i) {
    const auto& next = fresh.notifiers[i].destination;
    const auto& now = current.notifiers[i].destination;
    if (next.url != now.url || next.secret != now.secret) return true;
  }
  return false;
}

// Hands the heap pages freed by a replay of the whole history back to the system: without it a
// restart over a long history keeps its peak (hundreds of MB) resident for good.
void release_free_memory() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

// Answers already rendered stay current at most this long (ages and uptimes in them move).
constexpr std::chrono::milliseconds kRenderedMaxAge{1000};
// The rendered key pages kept (a page with every run of an 8,000-run key charted is 3.8 MB).
constexpr std::size_t kKeyPagesMaxBytes = 64 * 1024 * 1024;
// How long a notification request in flight may finish after SIGTERM or a SIGHUP that changed the
// notifiers (its outcome is then recorded: a receiver that answered is never sent it again);
// shutdown() gives up on everything at 9 s, inside systemd's 10 s.
constexpr std::chrono::milliseconds kDeliveryDrain{5000};

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
  bool judge(const std::string& name, const kernels::BenchOutcome& outcome, std::string& key);
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
  std::unique_ptr<HttpServer> http_;
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

int Daemon::run() {
  if (auto ok = start(); !ok) {
    log_.error(ok.error().message);
    stop_http_thread();
    return 1;
  }
  io_.run();
  stop_http_thread();
  if (bench_thread_.joinable()) {
    if (bench_idle_) {
      bench_thread_.join();
    } else {
      // The repetition did not finish within the stop grace period: abandon it.
      bench_thread_.detach();
      log_.warning("stopped without waiting for the running benchmark");
      std::fflush(stderr);
      std::_Exit(0);
    }
  }
  return 0;
}

// Ends the HTTP thread: whatever it still serves is cut (stop() has closed the connections);
// then the pages thread, whose answers nobody waits for any more.
void Daemon::stop_http_thread() {
  http_io_.stop();
  if (http_thread_.joinable()) http_thread_.join();
  pages_work_.reset();
  pages_io_.stop();
  if (pages_thread_.joinable()) pages_thread_.join();
}

// The detector settings the pages replay with: the engine's, copied for the pages thread.
void Daemon::set_pages_options() {
  std::lock_guard lock(pages_options_mutex_);
  pages_options_ = engine_.options();
}

DashboardPages Daemon::dashboard_pages() {
  DashboardPages pages;
  pages.key_pages = &key_pages_;
  pages.engine_options = [this] {
    std::lock_guard lock(pages_options_mutex_);
    return pages_options_;
  };
  if (pages_store_) {
    pages.context = &pages_io_;
    pages.store = &*pages_store_;
  } else {
    pages.store = &store_;  // on the engine's thread, as every other handler
  }
  return pages;
}

core::Status Daemon::start() {
  for (const auto& w : config_.warnings) log_.warning(w);
  if (const auto fake = runners::fake_gpus_notice(); !fake.empty()) log_.warning(fake);
  log_.info("config " + config_.source + ": " + config::redacted_json(config_).dump());
  engine_.set_change_listener(
      [this](std::optional<std::int64_t> key_id) { key_pages_.changed(key_id); });
  set_pages_options();
  KW_TRY(engine_.rebuild());
  release_free_memory();
  // A stored row that cannot be read is left out of every query, never fatal: say which.
  for (const auto& why : storage::RunStore(store_).unreadable()) {
    log_.warning("skipping an unreadable stored run: " + why);
  }

  HttpServerOptions http_options;
  http_options.host = config_.http.host;
  http_options.port = config_.http.port;
  http_options.header_timeout = config_.http.header_timeout;
  http_options.max_connections_per_client = config_.http.max_connections_per_client;
  http_options.handler_context = &io_;
  if (auto pages = storage::Connection::open(config_.storage.path, storage::OpenMode::ReadOnly)) {
    pages_store_.emplace(std::move(*pages));
  } else {
    log_.warning("the dashboard's key pages render on the engine's thread: " +
                 pages.error().message);
  }
  http_ = KW_TRY(
      HttpServer::create(http_io_, http_options, routes(), config_.http.token,
                         [this](std::string_view line) { log_.write(LogLevel::Debug, line); }));
  http_->start();

  KW_TRY(start_worker());
  (void)flush_notifications();  // owed by runs stored just before a crash
  remind();                     // reminders due while the daemon was down, then the timer

  bench_thread_ = std::thread([this] { bench_loop(); });
  wait_signal();
  if (auto interval = systemd::watchdog_interval()) ping_watchdog(*interval);
  const std::string listening = config_.http.host + ":" + std::to_string(http_->port());
  log_.info("listening on " + listening + "; backend " + std::string(kernels::to_string(backend_)) +
            (backend_note_.empty() ? "" : " (" + backend_note_ + ")") + "; " +
            std::to_string(config_.benchmarks.size()) + " benchmark(s), " +
            std::to_string(config_.notifiers.size()) + " notifier(s)");
  // Tests and scripts read the bound port from this line when they asked for port 0.
  std::fprintf(stdout, "kernelwatch: listening on %s\n", listening.c_str());
  std::fflush(stdout);
  systemd::notify_ready("listening on " + listening + ", backend " +
                        std::string(kernels::to_string(backend_)));
  cycle_.ready = true;
  published_.set_ready(true);
  http_thread_ = std::thread([this] { http_io_.run(); });
  if (pages_store_) pages_thread_ = std::thread([this] { pages_io_.run(); });
  schedule_.sync(config_, wall_now(), config_.schedule.at_start);
  cycle_.entries = schedule_.entries();
  if (!config_.benchmarks.empty()) schedule_next();
  return {};
}

core::Status Daemon::start_worker() {
  std::vector<std::string> names;
  for (const auto& n : config_.notifiers) names.push_back(n.destination.name);
  if (auto abandoned = storage::Outbox(store_).abandon_destinations_except(names, wall_now());
      !abandoned) {
    log_.error("outbox: " + abandoned.error().message);
  } else if (*abandoned > 0) {
    log_.warning(std::to_string(*abandoned) +
                 " queued notification(s) of removed destinations became dead letters");
  }
  if (config_.notifiers.empty()) return {};
  std::vector<notifiers::Destination> destinations;
  for (const auto& n : config_.notifiers) destinations.push_back(n.destination);
  notifiers::WorkerOptions options;
  options.format.public_url = config_.http.public_url;
  options.host = engine_.options().host;
  // Deliveries change the outbox counts /metrics and /api/v1/status show.
  options.on_event = [this](const notifiers::DeliveryEvent&) { published_.invalidate(); };
  options.on_storage = [this](std::string_view destination, const core::Error* error) {
    const std::string source = "outbox of `" + std::string(destination) + "`";
    if (error != nullptr) {
      published_.storage_failed(source, error->message);
    } else {
      published_.storage_recovered(source);
    }
  };
  worker_ = KW_TRY(notifiers::DeliveryWorker::create(
      io_, store_, std::move(destinations), notifiers::system_clock(),
      [this](notifiers::LogLevel level, std::string_view message) {
        log_.write(level == notifiers::LogLevel::Error     ? LogLevel::Error
                   : level == notifiers::LogLevel::Warning ? LogLevel::Warning
                                                           : LogLevel::Info,
                   message);
      },
      options));
  worker_->start();
  return {};
}

// SIGHUP changed the notifiers. The old worker starts nothing new; a request it has in flight
// finishes (its outcome recorded) or is cut after kDeliveryDrain, and only then does the new
// worker read the outbox, so no row goes out from both.
void Daemon::replace_worker() {
  if (worker_) {
    ++retiring_workers_;
    worker_->stop(kDeliveryDrain, [this] {
      --retiring_workers_;
      if (!stopping_) replace_worker();
    });
    worker_.reset();
    return;
  }
  if (retiring_workers_ > 0 || stopping_) return;  // started once the retiring one has ended
  if (auto ok = start_worker(); !ok) log_.error("SIGHUP: notifiers: " + ok.error().message);
}

void Daemon::wait_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal == SIGHUP) {
      reload();
      wait_signal();
      return;
    }
    log_.info(signal == SIGTERM ? "SIGTERM: stopping" : "SIGINT: stopping");
    shutdown();
  });
}

void Daemon::ping_watchdog(std::chrono::microseconds interval) {
  systemd::notify_watchdog();
  watchdog_timer_.expires_after(interval);
  watchdog_timer_.async_wait([this, interval](const boost::system::error_code& ec) {
    if (!ec && !stopping_) ping_watchdog(interval);
  });
}

// Arms the timer for the earliest entry's next run. While a cycle runs, its end arms it.
void Daemon::schedule_next() {
  if (stopping_ || config_.benchmarks.empty()) return;
  cycle_.next = schedule_.earliest();
  if (cycle_.running) return;
  const auto delay = std::chrono::ceil<std::chrono::milliseconds>(cycle_.next - wall_now());
  // Never an already-due timer: Asio arms those as an absolute timerfd deadline, which
  // libfaketime (CI's shifted-clock runs) rewrites by its offset into an invalid one, and the
  // first cycle would never start there. A millisecond later is the same to everyone else.
  schedule_timer_.expires_after(std::max(delay, std::chrono::milliseconds(1)));
  schedule_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    start_cycle("schedule", false);
    schedule_next();
  });
}

// A cycle of the entries that are due (all of them when `all`: a triggered cycle).
void Daemon::start_cycle(std::string reason, bool all) {
  std::lock_guard lock(bench_mutex_);
  if (cycle_.running || cycle_requested_) {
    log_.info("cycle (" + reason + ") skipped: one is already running");
    return;
  }
  const auto jitter = [this] {
    if (config_.schedule.jitter.count() <= 0) return 0ms;
    std::uniform_int_distribution<long long> pick(0, config_.schedule.jitter.count() - 1);
    return std::chrono::milliseconds(pick(rng_));
  };
  const auto due = schedule_.take_due(wall_now(), all, jitter);
  cycle_.entries = schedule_.entries();
  if (due.empty()) return;
  auto plan =
      cycle_plan(config_, backend_,
                 {sampler_, host_probe_, stop_pipe_.read_end(), inventory_, device_samplers_}, due);
  if (!inventory_problem_.empty()) {
    log_.error(std::string(runners::kFakeGpusVariable) + ": " + inventory_problem_);
    inventory_problem_.clear();
  }
  carry_over(plan, learned_);
  published_.invalidate();
  tally_ = CycleTally{reason, cycle_.count + 1, 0, 0, 0, {}};
  cycle_plan_ = std::move(plan);
  cycle_confirm_reruns_ = std::max(0, config_.detector.confirm_reruns);
  cycle_requested_ = true;
  cycle_.running = true;
  cycle_.last_start = wall_now();
  ++cycle_.count;
  bench_wake_.notify_all();
  systemd::notify_status("cycle " + std::to_string(cycle_.count) + " running (" + reason + ")");
}

void Daemon::bench_loop() {
  Plan plan;
  int confirm_reruns = 0;
  while (take_cycle(plan, confirm_reruns)) {
    bench_idle_ = false;
    const auto cycle_start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < plan.size() && !stopping_; ++i) {
      run_case(plan[i], i == 0 || plan[i - 1].entry != plan[i].entry, confirm_reruns);
    }
    const auto seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - cycle_start).count();
    asio::post(io_, [this, seconds] { end_cycle(seconds); });
    bench_idle_ = true;
  }
}

// Waits for a cycle request and takes its plan; false when the daemon stops.
bool Daemon::take_cycle(Plan& plan, int& confirm_reruns) {
  std::unique_lock lock(bench_mutex_);
  bench_wake_.wait(lock, [this] { return cycle_requested_ || stopping_; });
  if (stopping_) return false;
  plan = std::move(cycle_plan_);
  confirm_reruns = cycle_confirm_reruns_;
  cycle_requested_ = false;
  return true;
}

// Runs one source and, while one of its runs breached the band and awaits confirmation, runs it
// again at once (at most confirm_reruns times), unless its runs are confirmed by its next
// scheduled run. The engine lives on the io thread: the runs are judged there while this thread
// waits for the verdicts.
void Daemon::run_case(const PlannedSource& source, bool first, int confirm_reruns) {
  runners::RunProducer& producer = *source.producer;
  const std::string name = producer.name();
  for (int attempt = 0; attempt <= confirm_reruns && !stopping_; ++attempt) {
    const auto start = wall_now();
    const auto produced = producer.run(wall_now);
    if (stopping_ || (produced && produced->cancelled)) return;
    std::promise<bool> rerun;
    auto answer = rerun.get_future();
    asio::post(io_, [this, &produced, &rerun, &name, &source, start, first, attempt] {
      if (produced) {
        schedule_.record(source.entry, first && attempt == 0, start, wall_now(), *produced);
      } else {
        schedule_.record_error(source.entry, wall_now(), produced.error().message);
      }
      cycle_.entries = schedule_.entries();
      if (!produced) {
        log_.error(name + ": " + produced.error().message);
        ++cycle_.errors;
        ++tally_.errors;
        rerun.set_value(false);
        return;
      }
      if (!produced->error.empty()) log_.warning(name + ": " + produced->error);
      // Rerun while a key's newest run awaits confirmation: runs of one key on several GPUs
      // come in observed_at order, and a sibling's run already settled an earlier breach.
      std::map<std::string, bool> awaits;
      for (const auto& outcome : produced->runs) {
        std::string key;
        awaits[key] = judge(name, outcome, key);  // C++17: judged before awaits[key] is made
      }
      rerun.set_value(std::ranges::any_of(awaits, [](const auto& a) { return a.second; }));
    });
    if (!answer.get()) return;
    if (producer.confirm() == runners::ConfirmMode::Next) {
      log_.info(name + ": breached its band; its next scheduled run confirms");
      return;
    }
    log_.info(name + ": breached its band; rerunning to confirm");
  }
}

// io thread: stores and judges one run; true when it breached and awaits a rerun.
bool Daemon::judge(const std::string& name, const kernels::BenchOutcome& outcome,
                   std::string& key) {
  auto processed = engine_.process(outcome.record, wall_now());
  if (processed) key = processed->key_digest;
  published_.invalidate();
  if (!processed) {
    log_.error(name + ": storing the run failed: " + processed.error().message);
    published_.storage_failed("runs", processed.error().message);
    ++cycle_.errors;
    ++tally_.errors;
    return false;
  }
  if (processed->replaced_key) {
    const auto& old_key = *processed->replaced_key;
    log_.warning(processed->key_display + ": key " + core::short_digest(processed->key_digest) +
                 " replaces key " + core::short_digest(old_key.digest) +
                 ": the protocol's settings changed (bench.warmup, bench.repetitions, the cache "
                 "flush or the harness), so detection starts over with insufficient data; the "
                 "old key's history is kept but no longer compared");
  }
  published_.storage_recovered("runs");
  ++tally_.runs;
  ++tally_.verdicts[std::string(detectors::to_string(processed->verdict.kind))];
  tally_.resolved += processed->resolved.size();
  cycle_.count_run(outcome.record.run.status, outcome.record.run.median.value_or(0ns),
                   core::placement_of(outcome.record.run.metadata));
  if (!processed->fired.empty() || !processed->resolved.empty()) {
    log_.info(processed->key_display + ": " + std::to_string(processed->fired.size()) +
              " failed-run alert(s) fired, " + std::to_string(processed->resolved.size()) +
              " alert(s) resolved");
  }
  return processed->awaits_confirmation;
}

// io thread: the cycle's alerts go out, and the cycle's state says it is over.
void Daemon::end_cycle(double seconds) {
  const auto decided = flush_notifications();
  // One line per cycle: what ran, what the detector said, what it raised.
  std::string verdicts;
  for (const auto& [kind, count] : tally_.verdicts) {
    verdicts += (verdicts.empty() ? "" : ", ") + std::to_string(count) + " " + kind;
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", seconds);
  log_.info("cycle " + std::to_string(tally_.number) + " (" + tally_.reason + ") done in " + took +
            " s: " + std::to_string(tally_.runs) + " run(s) stored" +
            (verdicts.empty() ? "" : " (" + verdicts + ")") + ", " + std::to_string(tally_.errors) +
            " error(s); " + std::to_string(decided ? decided->fired.size() : 0) +
            " alert(s) fired, " + std::to_string(decided ? decided->incidents.size() : 0) +
            " incident(s), " + std::to_string(tally_.resolved) + " resolved");
  std::lock_guard lock(bench_mutex_);
  cycle_.running = false;
  cycle_.last_duration_seconds = seconds;
  cycle_.last_end = wall_now();
  // A cycle fails when a case could not run or be stored, or its alerts could not be decided.
  if (tally_.errors > 0 || !decided) {
    ++cycle_.failed;
  } else {
    cycle_.last_success = cycle_.last_end;
  }
  published_.invalidate();
  systemd::notify_status("idle; last cycle took " + std::to_string(static_cast<int>(seconds)) +
                         " s");
  schedule_next();  // entries that fell due while it ran go now
}

void Daemon::reload() {
  systemd::notify_reloading();
  auto fresh = config::load_config(options_.config);
  if (!fresh) {
    log_.error("SIGHUP: keeping the running config: " + fresh.error().message);
    systemd::notify_ready("config reload failed; running with the previous config");
    return;
  }
  if (fresh->storage.path != config_.storage.path || fresh->http.listen != config_.http.listen) {
    log_.warning("SIGHUP: storage.path and http.listen take effect at the next start only");
  }
  const bool notifiers_changed = notifiers_differ(*fresh, config_);
  if (!config_.benchmarks.empty() && (fresh->bench.warmup != config_.bench.warmup ||
                                      fresh->bench.repetitions != config_.bench.repetitions)) {
    log_.warning(
        "SIGHUP: bench.warmup or bench.repetitions changed: they are part of the protocol, so "
        "every case of this daemon starts over in a new key with insufficient data (the old "
        "keys' history is kept, no longer compared); restore the old values to continue them");
  }
  const auto storage_path = config_.storage.path;
  const auto listen = config_.http.listen;
  config_ = std::move(*fresh);
  config_.storage.path = storage_path;
  config_.http.listen = listen;
  for (const auto& w : config_.warnings) log_.warning(w);
  engine_.set_options(engine_options(config_));
  set_pages_options();  // before the replay, which drops every rendered key page
  // Detector settings apply to every key: replay the history with them.
  if (auto ok = engine_.rebuild(); !ok)
    log_.error("SIGHUP: replaying the history: " + ok.error().message);
  release_free_memory();
  published_.invalidate();
  http_->set_token(config_.http.token);
  if (notifiers_changed) replace_worker();
  schedule_timer_.cancel();
  schedule_.sync(config_, wall_now(), config::AtStart::Wait);
  cycle_.entries = schedule_.entries();
  schedule_next();
  log_.info("SIGHUP: config reloaded from " + config_.source);
  systemd::notify_ready("config reloaded");
}

void Daemon::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  systemd::notify_stopping();
  schedule_timer_.cancel();
  watchdog_timer_.cancel();
  reminder_timer_.cancel();
  signals_.cancel();
  // The server belongs to its thread; run() ends that thread once io_ is done.
  if (http_) asio::post(http_io_, [this] { http_->stop(); });
  if (worker_) {
    worker_drained_ = false;
    worker_->stop(kDeliveryDrain, [this] { worker_drained_ = true; });
  }
  {
    std::lock_guard lock(bench_mutex_);
    bench_wake_.notify_all();
  }
  stop_pipe_.signal();
  // The current repetition may finish; past 9 s it is abandoned (systemd waits 10 s).
  wait_for_bench(std::chrono::steady_clock::now() + 9s);
}

void Daemon::wait_for_bench(std::chrono::steady_clock::time_point deadline) {
  const bool idle = bench_idle_ && worker_drained_ && retiring_workers_ == 0;
  if (idle || std::chrono::steady_clock::now() >= deadline) {
    io_.stop();
    return;
  }
  stop_timer_.expires_after(50ms);
  stop_timer_.async_wait(
      [this, deadline](const boost::system::error_code&) { wait_for_bench(deadline); });
}

// Reminders of firing, unacknowledged alerts that are due, and the hourly outbox prune.
void Daemon::remind() {
  // Delivered notifications are kept a week for the record, then pruned (hourly).
  if (std::chrono::steady_clock::now() >= next_prune_) {
    next_prune_ = std::chrono::steady_clock::now() + 1h;
    if (auto pruned = storage::Outbox(store_).prune_delivered(wall_now() - 24h * 7); !pruned) {
      log_.error("pruning delivered notifications: " + pruned.error().message);
    }
  }
  // During a cycle its end sends what is due, with the cycle's alerts.
  if (!cycle_.running) (void)flush_notifications();
  arm_reminders();
}

// The next reminder falls due repeat_interval after the oldest firing alert's last
// notification; the timer wakes then (at least once a minute, for the prune and for a wall
// clock that jumped), and every flush re-arms it.
void Daemon::arm_reminders() {
  if (stopping_) return;
  std::chrono::milliseconds delay = 1min;
  if (auto next = engine_.next_reminder(); !next) {
    log_.error("alert reminders: " + next.error().message);
  } else if (*next) {
    const auto until = std::chrono::ceil<std::chrono::milliseconds>(**next - wall_now());
    delay = std::clamp<std::chrono::milliseconds>(until, 1s, delay);
  }
  reminder_timer_.expires_after(delay);
  reminder_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopping_) remind();
  });
}

std::optional<CycleClose> Daemon::flush_notifications() {
  // The held steps of the cycle (or posted batch) that ended are decided first.
  std::optional<CycleClose> decided;
  if (auto closed = engine_.close_cycle(wall_now()); !closed) {
    log_.error("deciding the cycle's alerts failed (they are decided again at the next start): " +
               closed.error().message);
  } else {
    decided = *closed;
    for (const auto& alert : closed->fired) {
      log_.info("alert " + std::string(core::to_string(alert.kind)) + " " +
                std::string(core::to_string(alert.direction)) + " on " + alert.key.display() +
                ": " + alert.explanation);
    }
    for (const auto& incident : closed->incidents) {
      log_.info("environment incident " + incident.id + ": " + incident.explanation);
    }
  }
  auto written = engine_.flush_notifications(wall_now());
  published_.invalidate();
  if (!written) {
    log_.error("queueing notifications failed (they stay owed and go out with the next cycle): " +
               written.error().message);
    return decided;
  }
  if (*written > 0 && worker_) worker_->wake();
  if (*written > 0) arm_reminders();  // the alerts just notified set the next reminder
  return decided;
}

ApiContext Daemon::api_context() {
  ApiContext c;
  c.store = &store_;
  c.engine = &engine_;
  c.config = &config_;
  c.cycle = &cycle_;
  c.worker = worker_.get();
  c.backend = std::string(kernels::to_string(backend_));
  c.backend_note = backend_note_;
  c.started = started_;
  c.started_wall = started_wall_;
  c.flush = [this] { return flush_notifications(); };
  c.status_cache = &status_cache_;
  c.published = &published_;
  c.log = [this](LogLevel level, std::string_view message) { log_.write(level, message); };
  c.trigger = [this] {
    if (cycle_.running) return false;
    start_cycle("api", true);
    return true;
  };
  return c;
}

std::vector<Route> Daemon::routes() {
  return make_routes([this] { return api_context(); }, published_, dashboard_pages());
}

}  // namespace

int run_daemon(const DaemonOptions& options) {
  // Past a file-size limit (RLIMIT_FSIZE) a write fails with EFBIG, as on a full disk, instead
  // of the signal killing the daemon: the error is handled and the writes retried.
  std::signal(SIGXFSZ, SIG_IGN);
  Log log;
  auto config = config::load_config(options.config);
  if (!config) {
    log.error(config.error().message);
    return 1;
  }
  auto store = storage::Connection::open(config->storage.path, storage::OpenMode::Create);
  if (!store) {
    log.error(store.error().message);
    return 1;
  }
  // No backend configured ("auto"): CUDA when there is a GPU, else the CPU, with the reason.
  kernels::Backend backend = kernels::Backend::Cpu;
  std::string note;
  if (config->backend.value_or(kernels::Backend::Cuda) == kernels::Backend::Cuda) {
    auto cuda = kernels::backend_available(kernels::Backend::Cuda);
    if (cuda) {
      backend = kernels::Backend::Cuda;
    } else if (config->backend) {
      log.error("backend cuda: " + cuda.error().message);
      return 1;
    } else {
      note = cuda.error().message;
    }
  }
  Daemon daemon(options, std::move(*config), std::move(*store), backend, note);
  return daemon.run();
}

}  // namespace kernelwatch::daemon
