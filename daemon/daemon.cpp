#include "daemon/detail/daemon.hpp"

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
namespace detail {

using namespace std::chrono_literals;

namespace {

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "kernelwatch";
  return buffer;
}

}  // namespace

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
  if (auto pages =
          storage::Connection::open(config_.storage.location(), storage::OpenMode::ReadOnly)) {
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
      log_.info("environment incident " + incident.id.long_form() + ": " + incident.explanation);
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

}  // namespace detail

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
  auto store = storage::Connection::open(config->storage.location(), storage::OpenMode::Create);
  if (!store) {
    log.error(store.error().message);
    return 1;
  }
  if (auto claimed = store->claim_for_daemon(); !claimed) {
    log.error(claimed.error().message);
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
  detail::Daemon daemon(options, std::move(*config), std::move(*store), backend, note);
  return daemon.run();
}

}  // namespace kernelwatch::daemon
