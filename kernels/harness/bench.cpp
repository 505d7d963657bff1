#include "kernels/harness/bench.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kernels/detail/harness_device.hpp"
#include "kernels/harness/check.hpp"

namespace kernelwatch::kernels {
namespace {

std::uint64_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream in(line.substr(13));
      std::uint64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

std::string gib(std::uint64_t bytes) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f GiB",
                static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buffer;
}

// Runs the gate; an empty string means the case matched the oracle.
core::Result<std::string> correctness_gate(const BenchRequest& request,
                                           const BenchContext& context) {
  const CaseSpec small = gate_spec(request.spec);
  auto gate = context.factory(request.id, small);
  if (!gate) return tl::unexpected(gate.error());
  return check_case(**gate, request.seed ^ 0x9e3779b97f4a7c15ULL);
}

}  // namespace

CaseSpec gate_spec(const CaseSpec& spec) {
  CaseSpec small = spec;
  small.rows = std::min<std::int64_t>(spec.rows, 8);
  return small;
}

std::uint64_t bytes_needed(const CaseId& id, const CaseSpec& spec, const TimingPolicy& policy) {
  const auto moved = static_cast<std::uint64_t>(std::max<std::int64_t>(0, bytes_moved(id, spec)));
  return moved + flush_bytes_for(id.backend, policy);
}

core::Result<BenchOutcome> run_benchmark(const BenchRequest& request, const BenchContext& context) {
  KW_ASSERT(static_cast<bool>(context.now), "a benchmark needs the caller's clock");
  const CaseId& id = request.id;
  if (auto ok = backend_available(id.backend); !ok) return tl::unexpected(ok.error());
  if (auto ok = validate(id.kernel, request.spec); !ok) return tl::unexpected(ok.error());

  RunContext run;
  run.id = id;
  run.spec = request.spec;
  run.policy = request.policy;
  run.build = current_build();
  run.cpu = probe_cpu();
  // Part of the protocol (and so of the key) for every run of the case, failed ones included.
  run.flush_bytes = flush_bytes_for(id.backend, request.policy);
  BenchOutcome outcome;
  outcome.bytes_moved = bytes_moved(id, request.spec);

  // Checked before anything is allocated.
  const std::uint64_t needed = bytes_needed(id, request.spec, request.policy);
  std::uint64_t free_bytes = 0;
  if (id.backend == Backend::Cuda) {
    auto gpu = detail::query_gpu(request.device);
    if (!gpu) return tl::unexpected(gpu.error());
    run.gpu = *gpu;
    outcome.peak_gbps = gpu->peak_bandwidth_gbps;
    auto free_gpu = detail::free_gpu_memory(request.device);
    if (!free_gpu) return tl::unexpected(free_gpu.error());
    free_bytes = *free_gpu;
  } else {
    free_bytes = available_host_memory();
  }
  if (free_bytes != 0 && needed > free_bytes) {
    return core::fail(core::ErrorCode::OutOfMemory,
                      id.name() + " " + workload_of(id, request.spec).label() + " needs at least " +
                          std::to_string(needed) + " bytes (" + gib(needed) + ") but " +
                          std::to_string(free_bytes) + " bytes (" + gib(free_bytes) + ") are free");
  }

  Nvml nvml;
  if (run.gpu && nvml.available()) {
    const std::string driver = nvml.driver_version();
    if (!driver.empty()) run.gpu->driver_version = driver;
  }

  auto gate = correctness_gate(request, context);
  if (!gate) return tl::unexpected(gate.error());
  if (!gate->empty()) {
    run.status = core::RunStatus::Failed;
    run.reason = "correctness gate: " + *gate;
    run.observed_at = context.now();
    outcome.record = make_record(run);
    return outcome;
  }

  auto c = context.factory(id, request.spec);
  if (!c) return tl::unexpected(c.error());
  if (auto ok = (*c)->prepare(request.seed); !ok) return tl::unexpected(ok.error());
  run.observed_at = context.now();
  if (run.gpu) run.before = nvml.sample(run.gpu->uuid, static_cast<unsigned>(run.gpu->index));
  auto timings = time_case(**c, request.policy);
  if (run.gpu) run.after = nvml.sample(run.gpu->uuid, static_cast<unsigned>(run.gpu->index));
  if (!timings) {
    // The case ran before (the gate), so a failure now is a run failure, not bad input.
    run.status = core::RunStatus::Failed;
    run.reason = timings.error().message;
    outcome.record = make_record(run);
    return outcome;
  }
  run.timings = std::move(*timings);
  const std::string reason = inconclusive_reason(run.before, run.after);
  if (!reason.empty()) {
    run.status = core::RunStatus::Inconclusive;
    run.reason = reason;
  }
  outcome.summary = summarize(run.timings->samples_ns);
  outcome.achieved_gbps =
      achieved_gbps(outcome.bytes_moved, static_cast<double>(outcome.summary->median.count()));
  outcome.record = make_record(run);
  return outcome;
}

}  // namespace kernelwatch::kernels
