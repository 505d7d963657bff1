// The daemon's cycles (detail/cycle_runner.hpp): the schedule's timer, the benchmark thread that
// runs each planned source and its confirming reruns through the seam (runners/producer.hpp), the
// judging of each run on the io thread, the cycle's end.
#include "daemon/detail/cycle_runner.hpp"

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
#include "daemon/clock.hpp"
#include "daemon/systemd.hpp"

namespace kernelwatch::daemon::detail {

namespace asio = boost::asio;
using namespace std::chrono_literals;

void CycleRunner::start_thread() {
  thread_ = std::thread([this] { bench_loop(); });
}

void CycleRunner::start(config::AtStart at_start) {
  state_.ready = true;
  schedule_.sync(parts_.config, wall_now(), at_start);
  state_.entries = schedule_.entries();
  if (!parts_.config.benchmarks.empty()) schedule_next();
}

void CycleRunner::reload() {
  timer_.cancel();
  schedule_.sync(parts_.config, wall_now(), config::AtStart::Wait);
  state_.entries = schedule_.entries();
  schedule_next();
}

bool CycleRunner::trigger() {
  if (state_.running) return false;
  start_cycle("api", true);
  return true;
}

void CycleRunner::stop() {
  stopping_ = true;
  timer_.cancel();
  {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  }
  host_.stop_pipe.signal();
}

bool CycleRunner::join() {
  if (!thread_.joinable()) return true;
  if (!idle_) {
    thread_.detach();
    return false;
  }
  thread_.join();
  return true;
}

// Arms the timer for the earliest entry's next run. While a cycle runs, its end arms it.
void CycleRunner::schedule_next() {
  if (stopping_ || parts_.config.benchmarks.empty()) return;
  state_.next = schedule_.earliest();
  if (state_.running) return;
  const auto delay = std::chrono::ceil<std::chrono::milliseconds>(state_.next - wall_now());
  // Never an already-due timer: Asio arms those as an absolute timerfd deadline, which
  // libfaketime (CI's shifted-clock runs) rewrites by its offset into an invalid one, and the
  // first cycle would never start there. A millisecond later is the same to everyone else.
  timer_.expires_after(std::max(delay, std::chrono::milliseconds(1)));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    start_cycle("schedule", false);
    schedule_next();
  });
}

// A cycle of the entries that are due (all of them when `all`: a triggered cycle).
void CycleRunner::start_cycle(std::string reason, bool all) {
  std::lock_guard lock(mutex_);
  if (state_.running || requested_) {
    parts_.log.info("cycle (" + reason + ") skipped: one is already running");
    return;
  }
  const auto jitter = [this] {
    if (parts_.config.schedule.jitter.count() <= 0) return 0ms;
    std::uniform_int_distribution<long long> pick(0, parts_.config.schedule.jitter.count() - 1);
    return std::chrono::milliseconds(pick(rng_));
  };
  const auto due = schedule_.take_due(wall_now(), all, jitter);
  state_.entries = schedule_.entries();
  if (due.empty()) return;
  auto plan = cycle_plan(parts_.config, parts_.backend,
                         {host_.sampler,
                          host_.probe,
                          host_.stop_pipe.read_end(),
                          host_.inventory,
                          host_.device_samplers,
                          runners::this_harness_host(),
                          {}},
                         due);
  if (!host_.inventory_problem.empty()) {
    parts_.log.error(std::string(runners::kFakeGpusVariable) + ": " + host_.inventory_problem);
    host_.inventory_problem.clear();
  }
  carry_over(plan, learned_);
  parts_.published.invalidate();
  tally_ = Tally{reason, state_.count + 1, 0, 0, 0, {}};
  plan_ = std::move(plan);
  confirm_reruns_ = std::max(0, parts_.config.detector.confirm_reruns);
  requested_ = true;
  state_.running = true;
  state_.last_start = wall_now();
  ++state_.count;
  wake_.notify_all();
  systemd::notify_status("cycle " + std::to_string(state_.count) + " running (" + reason + ")");
}

void CycleRunner::bench_loop() {
  Plan plan;
  int confirm_reruns = 0;
  while (take_cycle(plan, confirm_reruns)) {
    idle_ = false;
    const auto cycle_start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < plan.size() && !stopping_; ++i) {
      run_case(plan[i], i == 0 || plan[i - 1].entry != plan[i].entry, confirm_reruns);
    }
    const auto seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - cycle_start).count();
    asio::post(parts_.io, [this, seconds] { end_cycle(seconds); });
    idle_ = true;
  }
}

// Waits for a cycle request and takes its plan; false when the daemon stops.
bool CycleRunner::take_cycle(Plan& plan, int& confirm_reruns) {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [this] { return requested_ || stopping_; });
  if (stopping_) return false;
  plan = std::move(plan_);
  confirm_reruns = confirm_reruns_;
  requested_ = false;
  return true;
}

// Runs one source and, while one of its runs breached the band and awaits confirmation, runs it
// again at once (at most confirm_reruns times), unless its runs are confirmed by its next
// scheduled run. The engine lives on the io thread: the runs are judged there while this thread
// waits for the verdicts.
void CycleRunner::run_case(const PlannedSource& source, bool first, int confirm_reruns) {
  runners::RunProducer& producer = *source.producer;
  const std::string name = producer.name();
  for (int attempt = 0; attempt <= confirm_reruns && !stopping_; ++attempt) {
    const auto start = wall_now();
    const auto produced = producer.run(wall_now);
    if (stopping_ || (produced && produced->cancelled)) return;
    std::promise<bool> rerun;
    auto answer = rerun.get_future();
    asio::post(parts_.io, [this, &produced, &rerun, &name, &source, start, first, attempt] {
      if (produced) {
        schedule_.record(source.entry, first && attempt == 0, start, wall_now(), *produced);
      } else {
        schedule_.record_error(source.entry, wall_now(), produced.error().message);
      }
      state_.entries = schedule_.entries();
      if (!produced) {
        parts_.log.error(name + ": " + produced.error().message);
        ++state_.errors;
        ++tally_.errors;
        rerun.set_value(false);
        return;
      }
      if (!produced->error.empty()) parts_.log.warning(name + ": " + produced->error);
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
      parts_.log.info(name + ": breached its band; its next scheduled run confirms");
      return;
    }
    parts_.log.info(name + ": breached its band; rerunning to confirm");
  }
}

// io thread: stores and judges one run; true when it breached and awaits a rerun.
bool CycleRunner::judge(const std::string& name, const core::Run& run, std::string& key) {
  auto processed = parts_.engine.process(run, wall_now());
  if (processed) key = processed->key_digest;
  parts_.published.invalidate();
  if (!processed) {
    parts_.log.error(name + ": storing the run failed: " + processed.error().message);
    parts_.published.storage_failed("runs", processed.error().message);
    ++state_.errors;
    ++tally_.errors;
    return false;
  }
  for (const auto& note : processed->warm_notes) {
    parts_.log.warning("storage.warm_start: " + note);
  }
  if (processed->warm_start) {
    parts_.log.info(describe_warm_start(processed->key_display, *processed->warm_start));
  }
  if (processed->replaced_key) {
    const auto& old_key = *processed->replaced_key;
    parts_.log.warning(
        processed->key_display + ": key " + core::short_digest(processed->key_digest) +
        " replaces key " + core::short_digest(old_key.digest) +
        ": the protocol's settings changed (bench.warmup, bench.repetitions, the cache "
        "flush or the harness), so detection starts over with insufficient data; the "
        "old key's history is kept but no longer compared");
  }
  parts_.published.storage_recovered("runs");
  ++tally_.runs;
  ++tally_.verdicts[std::string(detectors::to_string(processed->verdict.kind))];
  tally_.resolved += processed->resolved.size();
  const core::BenchmarkRun& stored = run.record().run;
  state_.count_run(stored.status, stored.median.value_or(0ns), core::placement_of(stored.metadata));
  if (!processed->fired.empty() || !processed->resolved.empty()) {
    parts_.log.info(processed->key_display + ": " + std::to_string(processed->fired.size()) +
                    " failed-run alert(s) fired, " + std::to_string(processed->resolved.size()) +
                    " alert(s) resolved");
  }
  return processed->awaits_confirmation;
}

// io thread: the cycle's alerts go out, and the cycle's state says it is over.
void CycleRunner::end_cycle(double seconds) {
  const auto decided = parts_.close();
  // One line per cycle: what ran, what the detector said, what it raised.
  std::string verdicts;
  for (const auto& [kind, count] : tally_.verdicts) {
    verdicts += (verdicts.empty() ? "" : ", ") + std::to_string(count) + " " + kind;
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", seconds);
  parts_.log.info("cycle " + std::to_string(tally_.number) + " (" + tally_.reason + ") done in " +
                  took + " s: " + std::to_string(tally_.runs) + " run(s) stored" +
                  (verdicts.empty() ? "" : " (" + verdicts + ")") + ", " +
                  std::to_string(tally_.errors) + " error(s); " +
                  std::to_string(decided ? decided->fired.size() : 0) + " alert(s) fired, " +
                  std::to_string(decided ? decided->incidents.size() : 0) + " incident(s), " +
                  std::to_string(tally_.resolved) + " resolved");
  std::lock_guard lock(mutex_);
  state_.running = false;
  state_.last_duration_seconds = seconds;
  state_.last_end = wall_now();
  // A cycle fails when a case could not run or be stored, or its alerts could not be decided.
  if (tally_.errors > 0 || !decided) {
    ++state_.failed;
  } else {
    state_.last_success = state_.last_end;
  }
  parts_.published.invalidate();
  systemd::notify_status("idle; last cycle took " + std::to_string(static_cast<int>(seconds)) +
                         " s");
  schedule_next();  // entries that fell due while it ran go now
}

}  // namespace kernelwatch::daemon::detail
