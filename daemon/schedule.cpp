#include "daemon/schedule.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
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
  std::optional<std::vector<runners::GpuDevice>> devices;  // enumerated once, when needed
  std::optional<runners::HostIdentity> host;
  for (const auto& b : c.benchmarks) {
    const std::string entry = entry_name(b);
    if (!entries.contains(entry)) continue;
    const auto add = [&](std::shared_ptr<runners::RunProducer> producer) {
      out.push_back({entry, std::move(producer)});
    };
    // A runner entry on the GPUs it selects: one producer per GPU, run at once; on a host
    // without GPUs, one producer as before.
    std::vector<runners::GpuDevice> gpus;
    if (b.runner == config::Runner::Command || b.runner == config::Runner::LigerBench) {
      if (!devices)
        devices = services.inventory ? services.inventory() : std::vector<runners::GpuDevice>{};
      if (!host) host = services.probe ? services.probe() : runners::HostIdentity{};
      const auto& env = b.runner == config::Runner::Command ? b.command.env : b.liger.environment;
      auto selected = runners::select_gpus(runners::selection_for(b.gpus, env), *devices);
      if (!selected) {
        add(std::make_shared<runners::FailingProducer>(entry, selected.error().message));
        continue;
      }
      gpus = std::move(*selected);
    }
    const auto per_gpu = [&](const std::string& name, auto make) {
      if (gpus.empty()) {
        add(make(nullptr, *host));
        return;
      }
      std::vector<std::shared_ptr<runners::RunProducer>> producers;
      for (const auto& gpu : gpus) producers.push_back(make(&gpu, runners::on_device(*host, gpu)));
      add(producers.size() == 1 ? producers.front()
                                : std::make_shared<runners::PerGpuProducer>(name, producers));
    };
    switch (b.runner) {
      case config::Runner::Command: {
        per_gpu(b.command.name,
                [&](const runners::GpuDevice* gpu,
                    runners::HostIdentity on) -> std::shared_ptr<runners::RunProducer> {
                  runners::CommandContext context;
                  context.probe = gpu == nullptr ? services.probe : [on] { return on; };
                  context.sampler = gpu != nullptr && services.device_sampler
                                        ? services.device_sampler(*gpu)
                                        : services.sampler;
                  context.cancel_fd = services.cancel_fd;
                  if (gpu != nullptr)
                    context.device_env = {{"CUDA_VISIBLE_DEVICES", gpu->visible_id()}};
                  return std::make_shared<runners::CommandProducer>(b.command, std::move(context));
                });
        break;
      }
      case config::Runner::LigerScripts: {  // its scripts choose their device
        runners::CommandContext context;
        context.probe = services.probe;
        context.sampler = services.sampler;
        context.cancel_fd = services.cancel_fd;
        add(std::make_shared<runners::LigerScriptsProducer>(b.liger_scripts, std::move(context)));
        break;
      }
      case config::Runner::LigerBench: {
        // The loader took the kernel from core's names.
        const core::Kernel kernel = core::parse_kernel(b.kernel.name()).value();
        for (const auto& liger_case :
             runners::liger_cases({kernel, b.pass, b.liger_providers, b.workloads})) {
          per_gpu(liger_case.name(),
                  [&](const runners::GpuDevice* gpu,
                      runners::HostIdentity on) -> std::shared_ptr<runners::RunProducer> {
                    runners::LigerBenchOptions options = b.liger;
                    options.sampler = gpu != nullptr && services.device_sampler
                                          ? services.device_sampler(*gpu)
                                          : services.sampler;
                    options.cancel_fd = services.cancel_fd;
                    options.placement = on.placement;
                    // A run that fails before the runner named its GPU is on the GPU probed here.
                    if (!on.gpu_name.empty()) options.fallback_gpu_name = on.gpu_name;
                    if (gpu != nullptr) {
                      options.environment.emplace_back("CUDA_VISIBLE_DEVICES", gpu->visible_id());
                    }
                    return std::make_shared<runners::LigerBenchProducer>(std::move(options),
                                                                         liger_case);
                  });
        }
        break;
      }
      case config::Runner::Harness: {
        runners::HarnessEntry entry{b.kernel, b.pass, b.providers, {}, backend, c.bench};
        for (const auto& workload : b.workloads) {
          auto spec = kernels::CaseSpec::from_workload(b.kernel, workload);
          if (spec) entry.shapes.push_back(*spec);  // validated by the config loader
        }
        for (auto& request : runners::harness_cases(entry)) {
          add(std::make_shared<runners::HarnessProducer>(std::move(request)));
        }
        break;
      }
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
