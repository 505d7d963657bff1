#include "daemon/schedule.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "core/names.hpp"

namespace kernelwatch::daemon {

std::string entry_name(const config::BenchmarkConfig& b) {
  return b.name();
}

Plan cycle_plan(const config::Config& c, kernels::Backend backend, const RunnerServices& services,
                const std::set<std::string>& entries) {
  Plan out;
  // kernelwatch's own kernels run on the daemon's backend with the config's timing.
  RunnerServices with = services;
  with.harness.backend = backend;
  with.harness.policy = c.bench;
  runners::CycleHost host(with);  // the host's GPUs: enumerated once, when an entry asks
  for (const auto& b : c.benchmarks) {
    const std::string entry = entry_name(b);
    if (!entries.contains(entry)) continue;
    // The entry's producers: one per case (or per execution), each on every GPU it runs on.
    for (auto& producer : b.source->producers(host)) out.push_back({entry, std::move(producer)});
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
    e.runner = std::string(b.source->runner_shown());
    e.interval = b.interval.value_or(c.schedule.interval);
    if (const EntryState* old = find(e.name)) {
      const auto interval = e.interval;
      e = *old;
      e.runner = std::string(b.source->runner_shown());
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
    if (run.record().run.outcome() != core::RunOutcome::Failed) continue;
    ++e->last_failed;
    if (error.empty()) {
      error = run.record().run.status_reason.empty()
                  ? std::string(core::to_string(run.record().run.status))
                  : run.record().run.status_reason;
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
