#include "runners/harness_child.hpp"

#include <cstdlib>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/key.hpp"
#include "runners/child_process.hpp"

namespace kernelwatch::runners {
namespace {

// A record is a few kilobytes; a child printing more than this is not the harness.
constexpr std::size_t kMaxChildOutput = 4 * 1024 * 1024;

// The child's one run, placed at `placement`, or why it is not one: a JSON array of exactly one
// record of the case (benchmark, provider, workload and protocol of `expected`; its environment
// is the child's own, as the CUDA runtime named its GPU). Its key is derived here, once.
core::Result<core::Run> read_child_run(const std::string& text,
                                       const core::ComparabilityKey& expected,
                                       const core::Placement& placement) {
  const auto fail = [](std::string why) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      "kernelwatch bench printed " + std::move(why));
  };
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail("output that is not JSON");
  if (!doc.is_array() || doc.size() != 1) return fail("not a JSON array of one record");
  auto record = core::parse_record(doc.front());
  if (!record) return fail("a record that does not parse: " + record.error().message);
  // The child saw its GPU as CUDA device 0: the host's index, UUID and bus id are the daemon's.
  core::set_placement(record->run.metadata, placement);
  auto run = core::Run::of(std::move(*record));
  if (!run) return fail("a record without a key: " + run.error().message);
  const core::ComparabilityKey* key = &run->key();
  if (key->benchmark.digest != expected.benchmark.digest ||
      key->provider.digest != expected.provider.digest ||
      key->workload.digest != expected.workload.digest ||
      key->protocol.digest != expected.protocol.digest) {
    return fail("a record of " + key->display() + " (" + key->protocol.label +
                "), not of the case it was asked for: " + expected.display() + " (" +
                expected.protocol.label + ")");
  }
  return run;
}

}  // namespace

std::vector<std::string> harness_child_argv(const std::filesystem::path& program,
                                            const kernels::BenchRequest& request,
                                            core::Timestamp observed) {
  const kernels::CaseId& id = request.id;
  return {program.string(),
          "bench",
          "--json",
          "--kernel",
          std::string(id.kernel.name()),
          "--pass",
          std::string(core::to_string(id.pass)),
          "--provider",
          std::string(core::to_string(id.provider)),
          "--backend",
          std::string(kernels::to_string(id.backend)),
          "--workload",
          kernels::workload_of(id.kernel, request.spec).label(),
          "--warmup-ms",
          std::to_string(request.policy.warmup.count()),
          "--rep-ms",
          std::to_string(request.policy.repetitions.count()),
          "--seed",
          std::to_string(request.seed),
          "--observed-at",
          core::format_timestamp(observed)};
}

kernels::GpuInfo gpu_info_of(const GpuDevice& gpu) {
  kernels::GpuInfo info;
  info.index = static_cast<int>(gpu.index);
  info.name = gpu.name;
  info.uuid = gpu.uuid;
  info.compute_major = gpu.compute_major;
  info.compute_minor = gpu.compute_minor;
  info.memory_bytes = gpu.memory_bytes;
  return info;
}

std::string HarnessChildProducer::name() const {
  return request_.id.name() + " " +
         kernels::workload_of(request_.id.kernel, request_.spec).label() + " on GPU " +
         std::to_string(gpu_.index);
}

void HarnessChildProducer::learn_from(const RunProducer& earlier) {
  const auto* same = dynamic_cast<const HarnessChildProducer*>(&earlier);
  if (same == nullptr || same->gpu_.index != gpu_.index || same->gpu_.uuid != gpu_.uuid) return;
  if (!hardware_) hardware_ = same->hardware_;
}

core::Result<Produced> HarnessChildProducer::run(const std::function<core::Timestamp()>& now) {
  const core::Timestamp observed = now();
  const std::string on_gpu = "on GPU " + std::to_string(gpu_.index);
  // The key a run of the case on this GPU has: where a failure is recorded, and what the
  // child's record must be of.
  const auto failed = [&](core::RunStatus status, std::string reason) {
    return kernels::failed_record(request_, gpu_info_of(gpu_), hardware_, status, std::move(reason),
                                  observed);
  };
  // Derived again only when the hardware a failure is recorded on changed (its first run, or the
  // child named its GPU otherwise than the inventory does).
  if (!expected_ || expected_hardware_ != hardware_) {
    auto key = core::key_of(failed(core::RunStatus::RuntimeError, ""));
    if (!key)
      return core::fail(core::ErrorCode::InvalidArgument, name() + ": " + key.error().message);
    expected_ = std::move(*key);
    expected_hardware_ = hardware_;
  }

  ChildRequest request;
  request.argv = harness_child_argv(options_.program, request_, observed);
  request.timeout = options_.timeout;
  request.environment_base = EnvironmentBase::Inherit;  // as the daemon's own harness runs
  request.environment = {{"CUDA_VISIBLE_DEVICES", gpu_.visible_id()}};
  request.stdout_keep_bytes = kMaxChildOutput;
  request.cancel_fd = options_.cancel_fd;
  const auto child = run_child(request, {});
  Produced out;
  if (child && child->end == ChildEnd::Cancelled) {
    out.cancelled = true;
    return out;
  }
  // `kernelwatch bench: <message>` and status 1: the case cannot run at all (no CUDA device, a
  // shape larger than the GPU's free memory), an error as in the daemon's own process, no run.
  if (child && child->end == ChildEnd::Exited && child->exit_code == 1) {
    constexpr std::string_view kPrefix = "kernelwatch bench: ";
    const std::string last = child->last_stderr_lines(1);
    if (last.starts_with(kPrefix)) {
      return core::fail(core::ErrorCode::Unavailable, on_gpu + ": " + last.substr(kPrefix.size()));
    }
  }

  std::string failure =
      child_failure(child, "kernelwatch bench", request.argv.front(), options_.timeout);
  if (failure.empty() && child->stdout_overflow) {
    failure = "kernelwatch bench printed more than " + std::to_string(kMaxChildOutput) + " bytes";
  } else if (failure.empty()) {
    auto read = read_child_run(child->stdout_text, *expected_, placement_);
    if (read) {
      hardware_ = read->record().environment.hardware;  // where the next failure is recorded
      out.runs.push_back(std::move(*read));
      return out;
    }
    failure = read.error().message;
  }
  const bool timed_out = child && child->end == ChildEnd::TimedOut;
  core::Record record =
      failed(timed_out ? core::RunStatus::Timeout : core::status_for_failure_reason(failure),
             on_gpu + ", kernelwatch bench " + failure);
  out.error = record.run.status_reason;
  core::set_placement(record.run.metadata, placement_);
  add_run(out, std::move(record));
  return out;
}

std::shared_ptr<RunProducer> harness_producer(CycleHost& host, const GpuSelection& selection,
                                              kernels::BenchRequest request,
                                              const HarnessHost& where,
                                              const HarnessChildOptions& options) {
  const std::string name =
      request.id.name() + " " + kernels::workload_of(request.id.kernel, request.spec).label();
  const auto in_process = [&] { return std::make_shared<HarnessProducer>(std::move(request)); };
  const bool on_gpus = request.id.backend == kernels::Backend::Cuda || where.stand_in_gpus;
  if (!on_gpus) {
    if (!selection.given) return in_process();
    return std::make_shared<FailingProducer>(
        name,
        "\"gpus\" applies to the CUDA backend; this daemon runs kernelwatch's kernels on "
        "the CPU (built without CUDA, or no GPU found)");
  }
  if (!selection.given && !where.daemon_visible_devices.empty()) return in_process();
  auto gpus = host.select(selection, {});
  if (!gpus) return std::make_shared<FailingProducer>(name, gpus.error().message);
  if (gpus->empty() || (!selection.given && gpus->size() == 1)) return in_process();
  return host.per_gpu(name, *gpus, [&](const GpuDevice* gpu, const HostIdentity& on) {
    return std::make_shared<HarnessChildProducer>(request, *gpu, on.placement, options);
  });
}

}  // namespace kernelwatch::runners
