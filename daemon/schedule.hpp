// What a cycle runs: every config entry has its own interval (`interval`, default
// schedule.interval); a cycle runs the entries that are due (a triggered cycle runs them all),
// each through the source it names (runners/producer.hpp), and records each entry's last
// execution for the status API, `kernelwatch status` and the dashboard. Composition code, io
// thread only (the plan's producers then run on the benchmark thread).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/time.hpp"
#include "kernels/types.hpp"
#include "runners/producer.hpp"
#include "runners/source_entry.hpp"

namespace kernelwatch::daemon {

// One config entry's schedule and its last execution.
struct EntryState {
  std::string name;    // "saxpy", "layer_norm/backward", "liger-bench tvd/backward"
  std::string runner;  // "harness", "liger-bench", "command", "liger-scripts"
  std::chrono::milliseconds interval{0};
  core::Timestamp next{};
  core::Timestamp last_start{};  // epoch: never ran
  core::Timestamp last_end{};
  std::uint64_t last_runs = 0;    // runs its last execution stored
  std::uint64_t last_failed = 0;  // of those, failed
  std::string last_error;         // the newest reason a run of it failed ("" none yet)
  core::Timestamp last_error_at{};
};

// An entry's name in logs and status (config::BenchmarkConfig::name()): its run source's name for
// it (a command or liger-scripts entry's `name`, "liger-bench tvd/backward", "<kernel>/<pass>" of
// kernelwatch's own kernels).
[[nodiscard]] std::string entry_name(const config::BenchmarkConfig& b);

// What the cycle's runners share (the daemon's probe of the host, its GPU sampler and GPU
// inventory, the pipe that stops a program when the daemon stops): runners/source_entry.hpp.
using RunnerServices = runners::RunnerServices;

struct PlannedSource {
  std::string entry;  // entry_name() of the entry it belongs to
  std::shared_ptr<runners::RunProducer> producer;
};
using Plan = std::vector<PlannedSource>;

// The sources of the entries named in `entries`, in config order: each entry gives its own
// producers (runners::SourceEntry::producers). `services.harness` is made here: kernelwatch's own
// kernels run on `backend` with the config's `bench` timing (what a caller puts there is unused).
[[nodiscard]] Plan cycle_plan(const config::Config& c, kernels::Backend backend,
                              const RunnerServices& services, const std::set<std::string>& entries);

// A source's producer comes from the current config (a SIGHUP's bench settings, runner path or
// timeout apply at the next cycle) and takes over what the last producer of the same source
// learned (a liger-bench producer remembers its GPU, a command producer its keys); `learned`
// then holds the plan's producers.
void carry_over(Plan& fresh, std::map<std::string, std::shared_ptr<runners::RunProducer>>& learned);

// A pipe whose read end becomes readable when the daemon stops (runners::ChildRequest::cancel_fd).
class StopPipe {
 public:
  StopPipe();
  ~StopPipe();
  StopPipe(const StopPipe&) = delete;
  StopPipe& operator=(const StopPipe&) = delete;
  [[nodiscard]] int read_end() const { return fds_[0]; }
  void signal();

 private:
  int fds_[2] = {-1, -1};
};

class EntrySchedule {
 public:
  // Matches the entries to a (new) config, by name: a kept entry keeps its state and its next run;
  // a changed interval moves that run to its last start plus the new interval when that is
  // sooner. A new entry is due now (AtStart::Run) or one of its intervals from now.
  void sync(const config::Config& c, core::Timestamp now, config::AtStart at_start);
  // The entries due at `now` (all of them when `all`), rescheduled one interval (plus `jitter`)
  // from now.
  [[nodiscard]] std::set<std::string> take_due(
      core::Timestamp now, bool all, const std::function<std::chrono::milliseconds()>& jitter);
  // The earliest next run; epoch when there is no entry.
  [[nodiscard]] core::Timestamp earliest() const;
  // A source of `entry` ran: `first` says it is the entry's first source in this cycle.
  void record(const std::string& entry, bool first, core::Timestamp start, core::Timestamp end,
              const runners::Produced& produced);
  void record_error(const std::string& entry, core::Timestamp at, const std::string& error);
  [[nodiscard]] const std::vector<EntryState>& entries() const { return entries_; }

 private:
  EntryState* find(const std::string& name);
  std::vector<EntryState> entries_;
};

}  // namespace kernelwatch::daemon
