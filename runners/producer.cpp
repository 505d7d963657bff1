#include "runners/producer.hpp"

#include "runners/gpus.hpp"

namespace kernelwatch::runners {

void add_run(Produced& out, core::Record record, const core::RunFigures& figures) {
  const std::string id = record.run.source_native.external_id;
  auto run = core::Run::of(std::move(record), figures);
  if (!run) {
    out.error += (out.error.empty() ? "" : "; ") + id + " has no comparability key (" +
                 run.error().message + "): not stored";
    return;
  }
  out.runs.push_back(std::move(*run));
}

void add_runs(Produced& out, std::vector<core::Record> records) {
  for (auto& record : records) add_run(out, std::move(record));
}

void add_harness_run(Produced& out, kernels::BenchOutcome outcome) {
  core::RunFigures figures;
  if (outcome.summary) figures.repetitions = static_cast<std::int64_t>(outcome.summary->count);
  figures.bytes_moved = outcome.bytes_moved;
  figures.achieved_gbps = outcome.achieved_gbps;
  figures.peak_gbps = outcome.peak_gbps;
  add_run(out, std::move(outcome.record), figures);
}

core::Result<Produced> HarnessProducer::run(const std::function<core::Timestamp()>& now) {
  kernels::BenchContext context;
  context.now = now;
  context.on_phase = on_phase_;
  auto outcome = KW_TRY(kernels::run_benchmark(request_, context));
  // The harness labels the GPU it ran on (gpu_index, gpu_uuid); the host is the daemon's.
  outcome.record.run.metadata.labels.emplace(std::string(core::kHostLabel), host_name());
  Produced out;
  add_harness_run(out, std::move(outcome));
  return out;
}

std::vector<kernels::BenchRequest> harness_cases(const HarnessEntry& entry) {
  std::vector<kernels::BenchRequest> out;
  for (const auto provider : entry.providers) {
    for (const auto& shape : entry.shapes) {
      kernels::BenchRequest request;
      request.id = {entry.kernel, entry.pass, provider, entry.backend};
      request.spec = shape;
      request.policy = entry.policy;
      request.seed = entry.seed;
      out.push_back(std::move(request));
    }
  }
  return out;
}

std::vector<LigerCase> liger_cases(const LigerBenchEntry& entry) {
  std::vector<LigerCase> out;
  for (const auto provider : entry.providers) {
    for (const auto& workload : entry.workloads) {
      out.push_back({entry.kernel, entry.pass, provider, workload});
    }
  }
  return out;
}

std::string LigerBenchProducer::name() const {
  if (cases_.empty()) return std::string(kLigerBenchRunner);
  const std::string first = cases_.front().name();
  return cases_.size() == 1 ? first : first + " and " + std::to_string(cases_.size() - 1) + " more";
}

core::Result<Produced> LigerBenchProducer::run(const std::function<core::Timestamp()>& now) {
  auto records = run_liger_bench(options_, cases_, now);
  KW_ASSERT(records.size() == cases_.size(), "one run per case");
  for (const auto& record : records) {
    const auto& hardware = record.environment.hardware;
    if (!core::is_failure(record.run.status) && !hardware.product.empty()) {
      const std::string product = hardware.product;
      options_.fallback_gpu_name =
          hardware.form_factor.empty() ? product : product + " " + hardware.form_factor;
    }
  }
  if (options_.placement) {
    for (auto& r : records) core::set_placement(r.run.metadata, *options_.placement);
  }
  Produced out;
  add_runs(out, std::move(records));
  return out;
}

void LigerBenchProducer::learn_from(const RunProducer& earlier) {
  if (const auto* same = dynamic_cast<const LigerBenchProducer*>(&earlier); same != nullptr) {
    options_.fallback_gpu_name = same->options_.fallback_gpu_name;
  }
}

core::Result<Produced> CommandProducer::run(const std::function<core::Timestamp()>& now) {
  CommandContext context = context_;
  context.now = now;
  CommandOutcome outcome = run_command(entry_, context, known_);
  if (!outcome.keys.empty()) known_ = outcome.keys;
  Produced out;
  out.error = std::move(outcome.error);
  out.cancelled = outcome.cancelled;
  add_runs(out, std::move(outcome.runs));
  return out;
}

void CommandProducer::learn_from(const RunProducer& earlier) {
  if (const auto* same = dynamic_cast<const CommandProducer*>(&earlier);
      same != nullptr && same->entry_.name == entry_.name && known_.empty()) {
    known_ = same->known_;
  }
}

core::Result<Produced> LigerScriptsProducer::run(const std::function<core::Timestamp()>& now) {
  CommandContext context = context_;
  context.now = now;
  LigerScriptsOutcome outcome = run_liger_scripts(entry_, context, known_);
  Produced out;
  out.error = std::move(outcome.error);
  out.cancelled = outcome.cancelled;
  add_runs(out, std::move(outcome.runs));
  return out;
}

void LigerScriptsProducer::learn_from(const RunProducer& earlier) {
  if (const auto* same = dynamic_cast<const LigerScriptsProducer*>(&earlier);
      same != nullptr && same->entry_.name == entry_.name && known_.empty()) {
    known_ = same->known_;
  }
}

}  // namespace kernelwatch::runners
