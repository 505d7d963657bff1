#include "runners/producer.hpp"

namespace kernelwatch::runners {

core::Result<kernels::BenchOutcome> HarnessProducer::run(
    const std::function<core::Timestamp()>& now) {
  kernels::BenchContext context;
  context.now = now;
  return kernels::run_benchmark(request_, context);
}

core::Result<kernels::BenchOutcome> LigerBenchProducer::run(
    const std::function<core::Timestamp()>& now) {
  auto outcomes = run_liger_bench(options_, {case_}, now);
  KW_ASSERT(outcomes.size() == 1, "one case in, one run out");
  const auto& hardware = outcomes.front().record.environment.hardware;
  if (!core::is_failure(outcomes.front().record.run.status) && !hardware.product.empty()) {
    const std::string product = hardware.product;
    options_.fallback_gpu_name =
        hardware.form_factor.empty() ? product : product + " " + hardware.form_factor;
  }
  return std::move(outcomes.front());
}

void LigerBenchProducer::learn_from(const RunProducer& earlier) {
  if (const auto* same = dynamic_cast<const LigerBenchProducer*>(&earlier); same != nullptr) {
    options_.fallback_gpu_name = same->options_.fallback_gpu_name;
  }
}

}  // namespace kernelwatch::runners
