// The daemon's cycles as a part of it (detail/daemon.hpp): the schedule and its timer, the
// benchmark thread that runs each planned source (and its confirming reruns) through the seam
// (runners/producer.hpp), the judging of each run on the io thread, the cycle's end. Everything
// but the benchmark thread's loop runs on the io thread (the engine's). Private to daemon/.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "core/run.hpp"
#include "daemon/api.hpp"
#include "daemon/engine.hpp"
#include "daemon/log.hpp"
#include "daemon/schedule.hpp"
#include "kernels/types.hpp"
#include "runners/command.hpp"
#include "runners/gpus.hpp"
#include "runners/liger_bench.hpp"
#include "runners/producer.hpp"

namespace kernelwatch::daemon::detail {

// What the cycles work with, all owned by the daemon: its io_context (the engine's thread), its
// config (replaced in place by SIGHUP), the backend, the engine, the published answers, the log,
// and the close of a cycle (delivery: its alerts decided and sent; nullopt when that failed).
struct CycleParts {
  boost::asio::io_context& io;
  const config::Config& config;
  kernels::Backend backend;
  Engine& engine;
  Published& published;
  Log& log;
  std::function<std::optional<CycleClose>()> close;
};

// What the runners of every cycle share of this host: the GPU sampler and inventory, the host
// probe, and the pipe that stops a running program when the daemon stops.
struct HostServices {
  runners::GpuSampler sampler = runners::nvml_sampler();
  runners::HostProbe probe = runners::system_host_probe();
  std::string inventory_problem;  // a fake GPU list that could not be read
  runners::GpuInventory inventory = runners::system_gpu_inventory(&inventory_problem);
  runners::DeviceSamplers device_samplers = runners::nvml_device_samplers();
  // Written once at stop: a benchmark program running then is killed at once, with everything
  // it started, instead of holding the stop until the grace period ends.
  StopPipe stop_pipe;
};

class CycleRunner {
 public:
  explicit CycleRunner(CycleParts parts) : parts_(std::move(parts)), timer_(parts_.io) {}
  CycleRunner(const CycleRunner&) = delete;
  CycleRunner& operator=(const CycleRunner&) = delete;

  // The scheduler's state as the API reports it (io thread).
  [[nodiscard]] CycleState& state() { return state_; }
  // Starts the benchmark thread, which waits for a cycle.
  void start_thread();
  // Ready: the entries of the config scheduled (`at_start` says whether they are due now) and
  // the timer armed for the first.
  void start(config::AtStart at_start);
  // SIGHUP replaced the config: its entries are rescheduled.
  void reload();
  // A cycle of every entry now (the API); false when one is already running.
  bool trigger();
  // The daemon stops: no cycle starts; the running one stops after its current run, and a
  // benchmark program running now is killed.
  void stop();
  // Whether the benchmark thread waits for a cycle (the last one has ended).
  [[nodiscard]] bool idle() const { return idle_; }
  // Joins the benchmark thread; false when its repetition is still running (the stop grace
  // period ended): it is then left running, detached.
  [[nodiscard]] bool join();

 private:
  void schedule_next();
  void start_cycle(std::string reason, bool all);
  void bench_loop();
  bool take_cycle(Plan& plan, int& confirm_reruns);
  void run_case(const PlannedSource& source, bool first, int confirm_reruns);
  bool judge(const std::string& name, const core::Run& run, std::string& key);
  void end_cycle(double seconds);

  CycleParts parts_;
  // io thread: the schedule, its timer, the state the API reports, what the running cycle did
  // (for its one log line at the end).
  EntrySchedule schedule_;
  boost::asio::steady_timer timer_;
  std::mt19937_64 rng_{std::random_device{}()};
  CycleState state_;
  struct Tally {
    std::string reason;
    std::uint64_t number = 0;
    std::size_t runs = 0;
    std::size_t errors = 0;
    std::size_t resolved = 0;
    std::map<std::string, std::size_t> verdicts;  // by verdict kind, in name order
  };
  Tally tally_;
  HostServices host_;

  // The benchmark thread: waits for a cycle request, runs the cases, hands each record to the
  // io thread and waits for its verdict (a breach is rerun at once).
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool requested_ = false;
  Plan plan_;
  int confirm_reruns_ = 0;  // copied with the plan: reload() replaces the config
  // The newest producer of each source (carry_over); touched under mutex_.
  std::map<std::string, std::shared_ptr<runners::RunProducer>> learned_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> idle_{true};
};

}  // namespace kernelwatch::daemon::detail
