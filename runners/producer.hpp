// The seam every new run comes through: one interface for every source of runs (the in-process
// measurement harness of kernelwatch's own kernels, the liger-bench runner, the command runner,
// the liger-scripts runner) and the one expansion of an entry into its cases. The daemon's cycle,
// its confirming reruns, `kernelwatch discover` and `kernelwatch bench` all run their sources
// through it, so what happens to a run afterwards (probe verdict, storage, engine, alerts, API)
// is the same code for all. What each source declares about its runs: runners/sources.hpp.
// Level 2: core/, kernels/ (the harness) and this module's runners.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/run.hpp"
#include "core/time.hpp"
#include "kernels/harness/bench.hpp"
#include "kernels/harness/record.hpp"
#include "kernels/harness/timing.hpp"
#include "kernels/registry.hpp"
#include "runners/command.hpp"
#include "runners/liger_bench.hpp"
#include "runners/liger_scripts.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::runners {

// The one expansion of an entry of kernelwatch's own kernels into its cases: each provider on
// each shape, providers outer, in the entry's order. The daemon's cycle (daemon/schedule.cpp) and
// `kernelwatch bench` both take their cases from here, one HarnessProducer each.
struct HarnessEntry {
  kernels::KernelRef kernel = kernels::KernelRef("layer_norm");
  core::Pass pass = core::Pass::Forward;
  std::vector<core::Provider> providers;
  std::vector<kernels::CaseSpec> shapes;
  kernels::Backend backend = kernels::Backend::Cpu;
  kernels::TimingPolicy policy;
  std::uint64_t seed = 1;
};
[[nodiscard]] std::vector<kernels::BenchRequest> harness_cases(const HarnessEntry& entry);

// The one expansion of a liger-bench entry into its cases: each provider on each workload,
// providers outer. The daemon's cycle, `kernelwatch bench --runner liger-bench` and the config
// loader's check of the entry take their cases from here.
struct LigerBenchEntry {
  kernels::KernelRef kernel = kernels::KernelRef("tvd");  // one of kLigerBenchKernels
  core::Pass pass = core::Pass::Forward;
  std::vector<LigerProvider> providers;
  std::vector<core::Workload> workloads;
};
[[nodiscard]] std::vector<LigerCase> liger_cases(const LigerBenchEntry& entry);

// What one run of a producer gave: a run per key it covers (a harness case: one), each with its
// key, as every producer hands them over (the harness's and the runners' own result types stay
// inside their producers).
struct Produced {
  std::vector<core::Run> runs;
  std::string error;       // the execution as a whole failed (its runs are failed runs with it)
  bool cancelled = false;  // the daemon stopped it: nothing to store
};

// Adds the run of `record` to `out`, its key derived here, once (with `figures`: the harness's
// repetitions and bandwidth; none for a runner's record, whose times are its own). A record with
// no key is not a run: its reason is added to out.error.
void add_run(Produced& out, core::Record record, const core::RunFigures& figures = {});
// add_run of each of `records`.
void add_runs(Produced& out, std::vector<core::Record> records);
// add_run of the harness's outcome: its repetitions and bandwidth are the run's figures.
void add_harness_run(Produced& out, kernels::BenchOutcome outcome);

class RunProducer {
 public:
  virtual ~RunProducer() = default;
  // Names the source in logs: "tvd/backward/kernelwatch-fused/cuda", "tvd/backward/torch/
  // liger-bench ...", the name of a command entry.
  [[nodiscard]] virtual std::string name() const = 0;
  // One run (called again for a confirming rerun). An error means it cannot run at all (the
  // harness's bad shape or missing backend); a run that failed is a failed record.
  [[nodiscard]] virtual core::Result<Produced> run(const std::function<core::Timestamp()>& now) = 0;
  // How a breach of one of its runs is confirmed: a rerun at once, or its next scheduled run.
  [[nodiscard]] virtual ConfirmMode confirm() const { return ConfirmMode::Rerun; }
  // Takes over what an earlier producer of the same source learned from its runs (not its
  // settings: those come from the current config). Default: nothing to learn.
  virtual void learn_from(const RunProducer& earlier) { (void)earlier; }
};

// kernels::run_benchmark in this process.
class HarnessProducer final : public RunProducer {
 public:
  explicit HarnessProducer(kernels::BenchRequest request) : request_(std::move(request)) {}
  [[nodiscard]] std::string name() const override { return request_.id.name(); }
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;
  // Told each phase of a run as it starts (`kernelwatch bench`'s progress line).
  void on_phase(std::function<void(std::string_view)> callback) { on_phase_ = std::move(callback); }

 private:
  kernels::BenchRequest request_;
  std::function<void(std::string_view)> on_phase_;
};

// Cases through liger_bench.py in one child process: the daemon's one case (its rerun reruns that
// case alone), `kernelwatch bench`'s every case. Remembers the GPU its last result named, so a
// later run that fails before the runner says (interpreter gone) stays in the same key.
class LigerBenchProducer final : public RunProducer {
 public:
  LigerBenchProducer(LigerBenchOptions options, LigerCase c)
      : options_(std::move(options)), cases_{std::move(c)} {}
  LigerBenchProducer(LigerBenchOptions options, std::vector<LigerCase> cases)
      : options_(std::move(options)), cases_(std::move(cases)) {}
  // The case's name; of several cases, the first's and how many more.
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;
  // The GPU the earlier producer's last result named.
  void learn_from(const RunProducer& earlier) override;

 private:
  LigerBenchOptions options_;
  std::vector<LigerCase> cases_;
};

// A command entry: every result of one execution of its program. Remembers the keys of its last
// execution that produced any, so a failed execution is recorded in each of them.
class CommandProducer final : public RunProducer {
 public:
  CommandProducer(CommandEntry entry, CommandContext context)
      : entry_(std::move(entry)), context_(std::move(context)) {}
  [[nodiscard]] std::string name() const override { return entry_.name; }
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;
  [[nodiscard]] ConfirmMode confirm() const override { return entry_.confirm; }
  void learn_from(const RunProducer& earlier) override;
  [[nodiscard]] const std::vector<KnownKey>& known() const { return known_; }
  void set_known(std::vector<KnownKey> keys) { known_ = std::move(keys); }

 private:
  CommandEntry entry_;
  CommandContext context_;
  std::vector<KnownKey> known_;
};

// A liger-scripts entry: every row its scripts write in one execution. Remembers the keys of each
// script's last rows, so a failed script is recorded in each of them.
class LigerScriptsProducer final : public RunProducer {
 public:
  LigerScriptsProducer(LigerScriptsEntry entry, CommandContext context)
      : entry_(std::move(entry)), context_(std::move(context)) {}
  [[nodiscard]] std::string name() const override { return entry_.name; }
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;
  [[nodiscard]] ConfirmMode confirm() const override { return entry_.confirm; }
  void learn_from(const RunProducer& earlier) override;

 private:
  LigerScriptsEntry entry_;
  CommandContext context_;
  LigerScriptKeys known_;
};

}  // namespace kernelwatch::runners
