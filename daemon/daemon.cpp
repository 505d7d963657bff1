// The daemon's composition root (detail/daemon.hpp): start, signals, reload (SIGHUP), shutdown,
// the watchdog, the API's context; run_daemon.
#include "daemon/detail/daemon.hpp"

#include <fcntl.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "core/time.hpp"
#include "daemon/api.hpp"
#include "daemon/clock.hpp"
#include "daemon/engine.hpp"
#include "daemon/log.hpp"
#include "daemon/systemd.hpp"
#include "http/http_server.hpp"
#include "kernels/registry.hpp"
#include "kernels/types.hpp"
#include "runners/gpus.hpp"
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
  o.warm_start = c.storage.warm_start;
  o.fleet_controls = c.storage.fleet_controls;
  if (c.storage.warm_start || c.storage.fleet_controls) {
    o.fleet_location = [storage = c.storage](const std::string& schema) {
      return storage.location_of(schema);
    };
  }
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
    stop_threads();
    return 1;
  }
  io_.run();
  stop_threads();
  if (!cycles_.join()) {
    // The repetition did not finish within the stop grace period: abandon it.
    log_.warning("stopped without waiting for the running benchmark");
    std::fflush(stderr);
    std::_Exit(0);
  }
  return 0;
}

// Ends the HTTP thread: whatever it still serves is cut (stop() has closed the connections);
// then the pages thread, whose answers nobody waits for any more.
void Daemon::stop_threads() {
  front_.join();
  pages_.stop();
}

core::Status Daemon::start() {
  for (const auto& w : config_.warnings) log_.warning(w);
  if (const auto fake = runners::fake_gpus_notice(); !fake.empty()) log_.warning(fake);
  log_.info("config " + config_.source + ": " + config::redacted_json(config_).dump());
  engine_.set_change_listener(
      [this](std::optional<std::int64_t> key_id) { pages_.changed(key_id); });
  pages_.set_options(engine_.options());
  KW_TRY(engine_.rebuild());
  release_free_memory();
  // A stored row that cannot be read is left out of every query, never fatal: say which.
  for (const auto& why : storage::RunStore(store_).unreadable()) {
    log_.warning("skipping an unreadable stored run: " + why);
  }

  http::HttpServerOptions http_options;
  http_options.host = config_.http.host;
  http_options.port = config_.http.port;
  http_options.header_timeout = config_.http.header_timeout;
  http_options.max_connections_per_client = config_.http.max_connections_per_client;
  http_options.handler_context = &io_;
  pages_.open(config_.storage.location(), log_);
  KW_TRY(front_.listen(http_options, routes(), config_.http.token, log_));

  KW_TRY(delivery_.start());
  (void)delivery_.flush();  // owed by runs stored just before a crash
  delivery_.remind();       // reminders due while the daemon was down, then the timer

  cycles_.start_thread();
  wait_signal();
  if (auto interval = systemd::watchdog_interval()) ping_watchdog(*interval);
  const std::string listening = config_.http.host + ":" + std::to_string(front_.port());
  log_.info("listening on " + listening + "; backend " + std::string(kernels::to_string(backend_)) +
            (backend_note_.empty() ? "" : " (" + backend_note_ + ")") + "; " +
            std::to_string(config_.benchmarks.size()) + " benchmark(s), " +
            std::to_string(config_.notifiers.size()) + " notifier(s)");
  // Tests and scripts read the bound port from this line when they asked for port 0.
  std::fprintf(stdout, "kernelwatch: listening on %s\n", listening.c_str());
  std::fflush(stdout);
  systemd::notify_ready("listening on " + listening + ", backend " +
                        std::string(kernels::to_string(backend_)));
  front_.published().set_ready(true);
  front_.run();
  pages_.run();
  cycles_.start(config_.schedule.at_start);
  return {};
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
    if (!ec && !stopped_) ping_watchdog(interval);
  });
}

void Daemon::reload() {
  systemd::notify_reloading();
  auto fresh = config::load_config(options_.config);
  if (!fresh) {
    log_.error("SIGHUP: keeping the running config: " + fresh.error().message);
    systemd::notify_ready("config reload failed; running with the previous config");
    return;
  }
  if (fresh->storage.location() != config_.storage.location() ||
      fresh->http.listen != config_.http.listen) {
    log_.warning("SIGHUP: storage and http.listen take effect at the next start only");
  }
  const bool notifiers_changed = notifiers_differ(*fresh, config_);
  if (!config_.benchmarks.empty() && (fresh->bench.warmup != config_.bench.warmup ||
                                      fresh->bench.repetitions != config_.bench.repetitions)) {
    log_.warning(
        "SIGHUP: bench.warmup or bench.repetitions changed: they are part of the protocol, so "
        "every case of this daemon starts over in a new key with insufficient data (the old "
        "keys' history is kept, no longer compared); restore the old values to continue them");
  }
  auto storage = config_.storage;
  // (a SQLite file has no fleet: ignored there)
  storage.warm_start = fresh->storage.warm_start;
  storage.fleet_controls = fresh->storage.fleet_controls;
  const auto listen = config_.http.listen;
  config_ = std::move(*fresh);
  config_.storage = storage;
  config_.http.listen = listen;
  for (const auto& w : config_.warnings) log_.warning(w);
  engine_.set_options(engine_options(config_));
  pages_.set_options(engine_.options());  // before the replay, which drops every rendered page
  // Detector settings apply to every key: replay the history with them.
  if (auto ok = engine_.rebuild(); !ok)
    log_.error("SIGHUP: replaying the history: " + ok.error().message +
               " (no run is judged until a replay succeeds: tried again at the next run)");
  release_free_memory();
  front_.published().invalidate();
  front_.set_token(config_.http.token);
  if (notifiers_changed) delivery_.replace();
  cycles_.reload();
  log_.info("SIGHUP: config reloaded from " + config_.source);
  systemd::notify_ready("config reloaded");
}

void Daemon::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  systemd::notify_stopping();
  watchdog_timer_.cancel();
  signals_.cancel();
  // The server belongs to its thread; run() ends that thread once io_ is done.
  front_.stop();
  delivery_.stop();
  cycles_.stop();
  // The current repetition may finish; past 9 s it is abandoned (systemd waits 10 s).
  wait_for_parts(std::chrono::steady_clock::now() + 9s);
}

// Stops io_ once the benchmark thread and the delivery workers have ended, or at `deadline`.
void Daemon::wait_for_parts(std::chrono::steady_clock::time_point deadline) {
  const bool idle = cycles_.idle() && delivery_.idle();
  if (idle || std::chrono::steady_clock::now() >= deadline) {
    io_.stop();
    return;
  }
  stop_timer_.expires_after(50ms);
  stop_timer_.async_wait(
      [this, deadline](const boost::system::error_code&) { wait_for_parts(deadline); });
}

ApiContext Daemon::api_context() {
  ApiContext c;
  c.store = &store_;
  c.engine = &engine_;
  c.config = &config_;
  c.cycle = &cycles_.state();
  c.worker = delivery_.worker();
  c.backend = std::string(kernels::to_string(backend_));
  c.backend_note = backend_note_;
  c.started = started_;
  c.started_wall = started_wall_;
  c.flush = [this] { return delivery_.flush(); };
  c.status_cache = &status_cache_;
  c.published = &front_.published();
  c.log = [this](LogLevel level, std::string_view message) { log_.write(level, message); };
  c.trigger = [this] { return cycles_.trigger(); };
  return c;
}

std::vector<Route> Daemon::routes() {
  return make_routes([this] { return api_context(); }, front_.published(), pages_.pages(store_));
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
