// One interface for "something that produces a run of one benchmark case": the in-process
// measurement harness (kernelwatch's own kernels) and the external liger-bench runner. The
// daemon's cycle and `kernelwatch bench` run every case through it, so what happens to a run
// afterwards (probe verdict, storage, engine, alerts, API) is the same code for both. Level 2:
// core/, kernels/ (the harness) and this module's runners.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/time.hpp"
#include "kernels/harness/bench.hpp"
#include "runners/liger_bench.hpp"

namespace kernelwatch::runners {

class RunProducer {
 public:
  virtual ~RunProducer() = default;
  // Names the case in logs: "tvd/backward/kernelwatch-fused/cuda", "tvd/backward/torch/liger-bench
  // ...".
  [[nodiscard]] virtual std::string name() const = 0;
  // One run (called again for a confirming rerun). An error means the case cannot run at all
  // (the harness's bad shape or missing backend); a run that failed is a `failed` record.
  [[nodiscard]] virtual core::Result<kernels::BenchOutcome> run(
      const std::function<core::Timestamp()>& now) = 0;
  // Takes over what an earlier producer of the same case learned from its runs (not its
  // settings: those come from the current config). Default: nothing to learn.
  virtual void learn_from(const RunProducer& earlier) { (void)earlier; }
};

// kernels::run_benchmark in this process.
class HarnessProducer final : public RunProducer {
 public:
  explicit HarnessProducer(kernels::BenchRequest request) : request_(std::move(request)) {}
  [[nodiscard]] std::string name() const override { return request_.id.name(); }
  [[nodiscard]] core::Result<kernels::BenchOutcome> run(
      const std::function<core::Timestamp()>& now) override;

 private:
  kernels::BenchRequest request_;
};

// One case through liger_bench.py in a child process. Remembers the GPU its last result named,
// so a later run that fails before the runner says (interpreter gone) stays in the same key.
class LigerBenchProducer final : public RunProducer {
 public:
  LigerBenchProducer(LigerBenchOptions options, LigerCase c)
      : options_(std::move(options)), case_(std::move(c)) {}
  [[nodiscard]] std::string name() const override { return case_.name(); }
  [[nodiscard]] core::Result<kernels::BenchOutcome> run(
      const std::function<core::Timestamp()>& now) override;
  // The GPU the earlier producer's last result named.
  void learn_from(const RunProducer& earlier) override;

 private:
  LigerBenchOptions options_;
  LigerCase case_;
};

}  // namespace kernelwatch::runners
