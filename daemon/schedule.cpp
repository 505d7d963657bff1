#include "daemon/schedule.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "core/names.hpp"

namespace kernelwatch::daemon {

std::string entry_name(const config::BenchmarkConfig& b) {
  if (b.runner == config::Runner::Command) return b.command.name;
  if (b.runner == config::Runner::LigerScripts) return b.liger_scripts.name;
  const std::string kernel_pass =
      std::string(b.kernel.name()) + "/" + std::string(core::to_string(b.pass));
  return b.runner == config::Runner::LigerBench
             ? std::string(runners::kLigerBenchRunner) + " " + kernel_pass
             : kernel_pass;
}

namespace {

std::string runner_name(config::Runner runner) {
  switch (runner) {
    case config::Runner::Harness:
      return "harness";
    case config::Runner::LigerBench:
      return std::string(runners::kLigerBenchRunner);
    case config::Runner::Command:
      return std::string(runners::kCommandRunner);
    case config::Runner::LigerScripts:
      return std::string(runners::kLigerScriptsRunner);
  }
  return "?";
}

}  // namespace

Plan cycle_plan(const config::Config& c, kernels::Backend backend, const RunnerServices& services,
                const std::set<std::string>& entries) {
  Plan out;
  for (const auto& b : c.benchmarks) {
    const std::string entry = entry_name(b);
    if (!entries.contains(entry)) continue;
    const auto add = [&](std::shared_ptr<runners::RunProducer> producer) {
      out.push_back({entry, std::move(producer)});
    };
    switch (b.runner) {
      case config::Runner::Command:
      case config::Runner::LigerScripts: {
        runners::CommandContext context;
        context.probe = services.probe;
        context.sampler = services.sampler;
        context.cancel_fd = services.cancel_fd;
        if (b.runner == config::Runner::Command) {
          add(std::make_shared<runners::CommandProducer>(b.command, std::move(context)));
        } else {
          add(std::make_shared<runners::LigerScriptsProducer>(b.liger_scripts, std::move(context)));
        }
        break;
      }
      case config::Runner::LigerBench: {
        // The loader took the kernel from core's names.
        const core::Kernel kernel = core::parse_kernel(b.kernel.name()).value();
        for (const auto provider : b.liger_providers) {
          for (const auto& workload : b.workloads) {
            runners::LigerBenchOptions options = b.liger;
            options.sampler = services.sampler;
            options.cancel_fd = services.cancel_fd;
            add(std::make_shared<runners::LigerBenchProducer>(
                std::move(options), runners::LigerCase{kernel, b.pass, provider, workload}));
          }
        }
        break;
      }
      case config::Runner::Harness:
        for (const auto provider : b.providers) {
          for (const auto& workload : b.workloads) {
            auto spec = kernels::CaseSpec::from_workload(b.kernel, workload);
            if (!spec) continue;  // validated by the config loader
            kernels::BenchRequest r;
            r.id = {b.kernel, b.pass, provider, backend};
            r.spec = *spec;
            r.policy = c.bench;
            add(std::make_shared<runners::HarnessProducer>(std::move(r)));
          }
        }
        break;
    }
  }
  return out;
}

void carry_over(Plan& fresh,
                std::map<std::string, std::shared_ptr<runners::RunProducer>>& learned) {
  for (auto& source : fresh) {
    auto& producer = source.producer;
    if (const auto it = learned.find(producer->name()); it != learned.end()) {
      producer->learn_from(*it->second);
    }
    learned[producer->name()] = producer;
  }
}

StopPipe::StopPipe() {
  if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
}

StopPipe::~StopPipe() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void StopPipe::signal() {
  if (fds_[1] >= 0) ::close(std::exchange(fds_[1], -1));
}

EntryState* EntrySchedule::find(const std::string& name) {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const EntryState& e) { return e.name == name; });
  return it == entries_.end() ? nullptr : &*it;
}

void EntrySchedule::sync(const config::Config& c, core::Timestamp now, config::AtStart at_start) {
  std::vector<EntryState> fresh;
  for (const auto& b : c.benchmarks) {
    EntryState e;
    e.name = entry_name(b);
    e.runner = runner_name(b.runner);
    e.interval = b.interval.value_or(c.schedule.interval);
    if (const EntryState* old = find(e.name)) {
      const auto interval = e.interval;
      e = *old;
      e.runner = runner_name(b.runner);
      if (e.interval != interval) {
        e.interval = interval;
        const bool ran = e.last_start.time_since_epoch().count() != 0;
        e.next = std::min(e.next, ran ? e.last_start + interval : now + interval);
      }
    } else {
      e.next = at_start == config::AtStart::Run ? now : now + e.interval;
    }
    fresh.push_back(std::move(e));
  }
  entries_ = std::move(fresh);
}

std::set<std::string> EntrySchedule::take_due(
    core::Timestamp now, bool all, const std::function<std::chrono::milliseconds()>& jitter) {
  std::set<std::string> out;
  for (auto& e : entries_) {
    // Due within a second: timers wake a little early or late, and entries of one interval
    // started together stay together.
    if (!all && e.next > now + std::chrono::seconds(1)) continue;
    out.insert(e.name);
    e.next = now + e.interval + (jitter ? jitter() : std::chrono::milliseconds(0));
  }
  return out;
}

core::Timestamp EntrySchedule::earliest() const {
  core::Timestamp out{};
  for (const auto& e : entries_) {
    if (out.time_since_epoch().count() == 0 || e.next < out) out = e.next;
  }
  return out;
}

void EntrySchedule::record(const std::string& entry, bool first, core::Timestamp start,
                           core::Timestamp end, const runners::Produced& produced) {
  EntryState* e = find(entry);
  if (e == nullptr) return;  // removed by a reload while it ran
  if (first) {
    e->last_start = start;
    e->last_runs = 0;
    e->last_failed = 0;
  }
  e->last_end = end;
  e->last_runs += produced.runs.size();
  std::string error = produced.error;
  for (const auto& run : produced.runs) {
    if (run.record.run.outcome() != core::RunOutcome::Failed) continue;
    ++e->last_failed;
    if (error.empty()) {
      error = run.record.run.status_reason.empty()
                  ? std::string(core::to_string(run.record.run.status))
                  : run.record.run.status_reason;
    }
  }
  if (!error.empty()) {
    e->last_error = error;
    e->last_error_at = end;
  }
}

void EntrySchedule::record_error(const std::string& entry, core::Timestamp at,
                                 const std::string& error) {
  if (EntryState* e = find(entry)) {
    e->last_error = error;
    e->last_error_at = at;
  }
}

}  // namespace kernelwatch::daemon
