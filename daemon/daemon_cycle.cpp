// The daemon's cycle (detail/daemon.hpp): the schedule's timer, the benchmark thread that runs
// each planned source and its confirming reruns through the seam (runners/producer.hpp), the
// judging of each run on the io thread, the cycle's end; reload (SIGHUP) and shutdown.
#include "daemon/detail/daemon.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include <boost/asio/post.hpp>

#include "core/digest.hpp"
#include "core/placement.hpp"
#include "daemon/systemd.hpp"

namespace kernelwatch::daemon::detail {

using namespace std::chrono_literals;

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
  auto plan = cycle_plan(config_, backend_,
                         {sampler_, host_probe_, stop_pipe_.read_end(), inventory_,
                          device_samplers_, runners::this_harness_host()},
                         due);
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
      for (const auto& run : produced->runs) {
        std::string key;
        awaits[key] = judge(name, run, key);  // C++17: judged before awaits[key] is made
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
bool Daemon::judge(const std::string& name, const core::Run& run, std::string& key) {
  auto processed = engine_.process(run, wall_now());
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
  const core::BenchmarkRun& stored = run.record().run;
  cycle_.count_run(stored.status, stored.median.value_or(0ns), core::placement_of(stored.metadata));
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
  const auto storage = config_.storage;
  const auto listen = config_.http.listen;
  config_ = std::move(*fresh);
  config_.storage = storage;
  config_.http.listen = listen;
  for (const auto& w : config_.warnings) log_.warning(w);
  engine_.set_options(engine_options(config_));
  set_pages_options();  // before the replay, which drops every rendered key page
  // Detector settings apply to every key: replay the history with them.
  if (auto ok = engine_.rebuild(); !ok)
    log_.error("SIGHUP: replaying the history: " + ok.error().message +
               " (no run is judged until a replay succeeds: tried again at the next run)");
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

}  // namespace kernelwatch::daemon::detail
