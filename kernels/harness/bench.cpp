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
  const auto gate = KW_TRY(context.factory(request.id, small));
  return check_case(*gate, request.seed ^ 0x9e3779b97f4a7c15ULL);
}

// The GPU (and its peak bandwidth) or the host, and whether the case fits in its free memory:
// checked before anything is allocated.
core::Status check_memory(const BenchRequest& request, RunContext& run, BenchOutcome& outcome) {
  const CaseId& id = request.id;
  const std::uint64_t needed = bytes_needed(id, request.spec, request.policy);
  std::uint64_t free_bytes = 0;
  if (id.backend == Backend::Cuda) {
    run.gpu = KW_TRY(detail::query_gpu(request.device));
    outcome.peak_gbps = run.gpu->peak_bandwidth_gbps;
    free_bytes = KW_TRY(detail::free_gpu_memory(request.device));
  } else {
    free_bytes = available_host_memory();
  }
  if (free_bytes != 0 && needed > free_bytes) {
    return core::fail(core::ErrorCode::OutOfMemory,
                      id.name() + " " + workload_of(id.kernel, request.spec).label() +
                          " needs at least " + std::to_string(needed) + " bytes (" + gib(needed) +
                          ") but " + std::to_string(free_bytes) + " bytes (" + gib(free_bytes) +
                          ") are free");
  }
  return {};
}

// Times the prepared case between two samples of the GPU's state. The case ran before (the
// gate), so a failure now is a failed run, not bad input; a GPU that throttled or was shared
// makes the run inconclusive.
void time_run(Case& c, const Nvml& nvml, RunContext& run, BenchOutcome& outcome) {
  if (run.gpu) run.before = nvml.sample(run.gpu->uuid, static_cast<unsigned>(run.gpu->index));
  auto timings = time_case(c, run.policy);
  if (run.gpu) run.after = nvml.sample(run.gpu->uuid, static_cast<unsigned>(run.gpu->index));
  if (!timings) {
    run.status = core::status_for_error(timings.error().code);
    run.reason = timings.error().message;
    return;
  }
  run.timings = std::move(*timings);
  const std::string reason = inconclusive_reason(run.before, run.after);
  if (!reason.empty()) {
    run.status = core::RunStatus::IncompleteEvidence;
    run.reason = reason;
  }
  outcome.summary = summarize(run.timings->samples_ns);
  outcome.achieved_gbps =
      achieved_gbps(outcome.bytes_moved, static_cast<double>(outcome.summary->median.count()));
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
  KW_TRY(backend_available(id.backend));
  KW_TRY(validate(id.kernel, request.spec));

  RunContext run;
  run.id = id;
  run.spec = request.spec;
  run.policy = request.policy;
  run.build = current_build(id.kernel);
  run.cpu = probe_cpu();
  // Part of the protocol (and so of the key) for every run of the case, failed ones included.
  run.flush_bytes = flush_bytes_for(id.backend, request.policy);
  BenchOutcome outcome;
  outcome.bytes_moved = bytes_moved(id, request.spec);
  KW_TRY(check_memory(request, run, outcome));

  Nvml nvml;
  if (run.gpu && nvml.available()) {
    const std::string driver = nvml.driver_version();
    if (!driver.empty()) run.gpu->driver_version = driver;
  }

  const auto phase = [&](std::string_view name) {
    if (context.on_phase) context.on_phase(name);
  };
  phase("checking correctness");
  const std::string mismatch = KW_TRY(correctness_gate(request, context));
  if (!mismatch.empty()) {
    run.status = core::RunStatus::IncorrectNumerical;
    run.reason = "correctness gate: " + mismatch;
    run.observed_at = context.now();
    outcome.record = make_record(run);
    return outcome;
  }

  phase("preparing inputs");
  const auto c = KW_TRY(context.factory(id, request.spec));
  KW_TRY(c->prepare(request.seed));
  run.observed_at = context.now();
  phase("timing");
  time_run(*c, nvml, run, outcome);
  outcome.record = make_record(run);
  return outcome;
}

core::Record failed_record(const BenchRequest& request, const std::optional<GpuInfo>& gpu,
                           const std::optional<core::Hardware>& hardware, core::RunStatus status,
                           std::string reason, core::Timestamp observed_at) {
  // The fields of the key as run_benchmark() fills them; the GPU is the caller's.
  RunContext run;
  run.id = request.id;
  run.spec = request.spec;
  run.policy = request.policy;
  run.build = current_build(request.id.kernel);
  run.cpu = probe_cpu();
  run.flush_bytes = flush_bytes_for(request.id.backend, request.policy);
  if (request.id.backend == Backend::Cuda) {
    run.gpu = gpu;
    run.hardware = hardware;
  }
  run.status = status;
  run.reason = std::move(reason);
  run.observed_at = observed_at;
  return make_record(run);
}

}  // namespace kernelwatch::kernels
