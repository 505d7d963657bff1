// One interface for every source of runs: the in-process measurement harness (kernelwatch's own
// kernels), the liger-bench runner (one case of Liger's and PyTorch's TVD and LayerNorm
// benchmarks) and the command runner (any program, every result it prints). The daemon's cycle
// runs each through it, so what happens to a run afterwards (probe verdict, storage, engine,
// alerts, API) is the same code for all. Level 2: core/, kernels/ (the harness) and this
// module's runners.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/time.hpp"
#include "kernels/harness/bench.hpp"
#include "runners/command.hpp"
#include "runners/liger_bench.hpp"
#include "runners/liger_scripts.hpp"

namespace kernelwatch::runners {

// What one run of a producer gave: a run per key it covers (a harness case: one).
struct Produced {
  std::vector<kernels::BenchOutcome> runs;
  std::string error;       // the execution as a whole failed (its runs are failed runs with it)
  bool cancelled = false;  // the daemon stopped it: nothing to store
};

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

// One case through liger_bench.py in a child process. Remembers the GPU its last result named,
// so a later run that fails before the runner says (interpreter gone) stays in the same key.
class LigerBenchProducer final : public RunProducer {
 public:
  LigerBenchProducer(LigerBenchOptions options, LigerCase c)
      : options_(std::move(options)), case_(std::move(c)) {}
  [[nodiscard]] std::string name() const override { return case_.name(); }
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;
  // The GPU the earlier producer's last result named.
  void learn_from(const RunProducer& earlier) override;

 private:
  LigerBenchOptions options_;
  LigerCase case_;
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
