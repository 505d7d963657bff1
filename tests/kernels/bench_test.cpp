// The harness end to end on the CPU backend: records, digests, the correctness gate.
#include "kernels/harness/bench.hpp"

#include <cstring>

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "core/kernelwatch_protocol.hpp"

#include "core/key.hpp"
#include "kernels/harness/check.hpp"

namespace kernelwatch::kernels {
namespace {

core::Timestamp fixed_now() {
  return *core::parse_timestamp("2030-01-02T12:00:00.000Z");  // the test's clock: any instant
}

BenchRequest small_request(KernelRef kernel, Pass pass, Provider provider) {
  BenchRequest request;
  request.id = {kernel, pass, provider, Backend::Cpu};
  request.spec.rows = 16;
  request.spec.cols = kernel == KernelRef("layer_norm") ? 256 : 512;
  request.policy.warmup = std::chrono::milliseconds(1);
  request.policy.repetitions = std::chrono::milliseconds(2);
  request.policy.min_repetitions = 10;
  request.policy.cpu_flush_bytes = std::size_t{1} << 20;
  return request;
}

BenchContext context() {
  BenchContext c;
  c.now = fixed_now;
  return c;
}

// Delegates to a real case and then corrupts one output element: a kernel with a bug.
class WrongCase : public Case {
 public:
  explicit WrongCase(std::unique_ptr<Case> inner)
      : Case(inner->id(), inner->spec()), inner_(std::move(inner)) {}
  core::Status prepare(std::uint64_t seed) override { return inner_->prepare(seed); }
  core::Status launch() override { return inner_->launch(); }
  core::Status synchronize() override { return inner_->synchronize(); }
  void* stream() const override { return inner_->stream(); }
  core::Status poison_outputs() override { return inner_->poison_outputs(); }
  core::Result<std::vector<HostTensor>> inputs() override { return inner_->inputs(); }
  core::Result<std::vector<HostTensor>> outputs() override {
    auto out = inner_->outputs();
    if (out && !out->empty() && !out->front().bytes.empty()) {
      auto& bytes = out->front().bytes;
      float value = 0;
      std::memcpy(&value, bytes.data(), sizeof value);
      value = value * 1.5f + 1.0f;
      std::memcpy(bytes.data(), &value, sizeof value);
    }
    return out;
  }

 private:
  std::unique_ptr<Case> inner_;
};

TEST(Bench, CpuRunBecomesAPassedRecordWithItsKey) {
  auto outcome = run_benchmark(
      small_request(KernelRef("layer_norm"), Pass::Backward, Provider::Fused), context());
  ASSERT_TRUE(outcome) << outcome.error().message;
  const core::Record& record = outcome->record;
  EXPECT_EQ(record.run.status, core::RunStatus::Passed);
  ASSERT_TRUE(outcome->summary);
  EXPECT_GE(outcome->summary->count, 10u);
  EXPECT_EQ(record.run.median, outcome->summary->median);
  EXPECT_LE(*record.run.latency("p20"), *record.run.median);
  EXPECT_GE(*record.run.latency("p80"), *record.run.median);
  auto key = core::key_of(record);
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(key->benchmark.label, "layer_norm/backward");
  EXPECT_EQ(key->provider.label, "kernelwatch-fused");
  EXPECT_EQ(key->workload.label, "hidden256-rows16-fp32");
  EXPECT_EQ(key->protocol.label, "kernelwatch-cpu-steady-clock-backward");
  EXPECT_EQ(record.run.workload_digest, key->workload.digest);
  // The record's digests name its documents (kernelindex's digests); the key's parts are
  // equivalence identities of their own (hardware only; the protocol's settings).
  const auto emitted = core::to_json(record);
  EXPECT_EQ(record.run.environment_digest, core::document_digest(emitted["environment"]));
  EXPECT_EQ(record.run.protocol_digest, core::document_digest(emitted["protocol"]));
  EXPECT_EQ(key->environment.digest,
            core::identity_digest(core::environment_identity(record.environment.hardware)));
  EXPECT_EQ(key->protocol.digest, core::protocol_equivalence(record.protocol.spec));
  EXPECT_EQ(record.run.source_native.external_id, "layer_norm/backward/kernelwatch-fused/" +
                                                      key->environment.label +
                                                      "/hidden256-rows16-fp32/2030-01-02-12-00-00");
  EXPECT_EQ(record.run.metadata.labels.at("kernelwatch_version"),
            current_build(KernelRef("tvd")).version);
  EXPECT_FALSE(record.run.implementation_digest.empty());
  // What it emits is what core parses back.
  auto again = core::parse_record(core::to_json(record));
  ASSERT_TRUE(again);
  EXPECT_EQ(core::to_json(*again), core::to_json(record));
}

std::string key_digest(const BenchRequest& request) {
  auto outcome = run_benchmark(request, context());
  EXPECT_TRUE(outcome) << outcome.error().message;
  return core::key_of(outcome->record)->digest();
}

TEST(Bench, KeyIsStableAndChangesWithShapeDtypeProviderAndBudgets) {
  const BenchRequest base = small_request(KernelRef("tvd"), Pass::Forward, Provider::Fused);
  const std::string digest = key_digest(base);
  EXPECT_EQ(key_digest(base), digest);

  BenchRequest shape = base;
  shape.spec.cols = 1024;
  BenchRequest dtype = base;
  dtype.spec.dtype = DType::Bf16;
  BenchRequest provider = base;
  provider.id.provider = Provider::Reference;
  BenchRequest budget = base;
  budget.policy.repetitions = std::chrono::milliseconds(3);
  BenchRequest warmup = base;
  warmup.policy.warmup = std::chrono::milliseconds(2);
  for (const BenchRequest* other : {&shape, &dtype, &provider, &budget, &warmup}) {
    EXPECT_NE(key_digest(*other), digest);
  }
}

TEST(Bench, AWrongKernelFailsTheGateAndIsNeverTimed) {
  BenchContext c = context();
  c.factory = [](const CaseId& id, const CaseSpec& spec) -> core::Result<std::unique_ptr<Case>> {
    return std::unique_ptr<Case>(std::make_unique<WrongCase>(KW_TRY(create_case(id, spec))));
  };
  const BenchRequest request =
      small_request(KernelRef("layer_norm"), Pass::Forward, Provider::Fused);
  auto outcome = run_benchmark(request, c);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->record.run.status, core::RunStatus::IncorrectNumerical);
  EXPECT_FALSE(outcome->summary);
  EXPECT_FALSE(outcome->record.run.median);
  const std::string reason = outcome->record.run.status_reason;
  EXPECT_NE(reason.find("correctness gate: y: relative error"), std::string::npos) << reason;
  // A failed run lands in the same key as the passing runs of the case.
  auto good = run_benchmark(request, context());
  ASSERT_TRUE(good);
  EXPECT_EQ(core::key_of(outcome->record)->digest(), core::key_of(good->record)->digest());
}

TEST(Bench, BadShapeAndMissingBackendAreErrorsBeforeAllocation) {
  BenchRequest zero = small_request(KernelRef("tvd"), Pass::Forward, Provider::Fused);
  zero.spec.rows = 0;
  auto outcome = run_benchmark(zero, context());
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, core::ErrorCode::InvalidArgument);

  BenchRequest huge = small_request(KernelRef("tvd"), Pass::Forward, Provider::Fused);
  huge.spec.rows = 1 << 20;
  huge.spec.cols = 1 << 20;
  outcome = run_benchmark(huge, context());
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, core::ErrorCode::OutOfMemory);
  EXPECT_NE(outcome.error().message.find("needs at least"), std::string::npos)
      << outcome.error().message;

  if (!backend_available(Backend::Cuda)) {
    BenchRequest cuda = small_request(KernelRef("tvd"), Pass::Forward, Provider::Fused);
    cuda.id.backend = Backend::Cuda;
    outcome = run_benchmark(cuda, context());
    ASSERT_FALSE(outcome);
    EXPECT_EQ(outcome.error().code, core::ErrorCode::Unavailable);
  }
}

TEST(Bench, RepetitionsFollowTheBudget) {
  TimingPolicy policy;
  policy.repetitions = std::chrono::milliseconds(100);
  EXPECT_EQ(repetitions_for(policy, 1e6), 100);    // 1 ms each
  EXPECT_EQ(repetitions_for(policy, 50e6), 10);    // at least the minimum
  EXPECT_EQ(repetitions_for(policy, 1.0), 10000);  // at most the maximum
  EXPECT_EQ(repetitions_for(policy, 0.0), 10000);
}

}  // namespace
}  // namespace kernelwatch::kernels
