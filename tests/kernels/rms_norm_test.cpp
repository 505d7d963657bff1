// RMSNorm (kernels/rms_norm/): hand-computed rows, the argument checks, the
// float64 oracle against a finite difference, its workload label (the one
// Liger's importer gives Liger's rms_norm history), its bandwidth floor, and
// every CPU case against the oracle over its sweep (also done for every kernel
// by cpu_providers_test; here with a fixed seed and a thread-count check).
#include "kernels/rms_norm/rms_norm.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu_threads.hpp"
#include "kernels/rms_norm/oracle.hpp"
#include "tests/kernels/case_check.hpp"

namespace kernelwatch::kernels {
namespace {

// Host tensors for one small fp32 RMSNorm, wired into the argument structs.
struct Fixture {
  std::int64_t rows;
  std::int64_t n;
  std::vector<float> x, w, y, rstd, dy, dx, dw;

  Fixture(std::int64_t rows_, std::int64_t n_)
      : rows(rows_),
        n(n_),
        x(rows * n),
        w(n, 1.0f),
        y(rows * n),
        rstd(rows),
        dy(rows * n, 1.0f),
        dx(rows * n),
        dw(n) {}

  RmsNormForward forward() {
    return RmsNormForward{ref(x, rows, n), ref(w, 1, n), ref(y, rows, n), ref(rstd, rows, 1)};
  }
  RmsNormBackward backward() {
    return RmsNormBackward{ref(dy, rows, n),   ref(x, rows, n),  ref(w, 1, n),
                           ref(rstd, rows, 1), ref(dx, rows, n), ref(dw, 1, n)};
  }
  static TensorRef ref(std::vector<float>& data, std::int64_t r, std::int64_t c) {
    return TensorRef{data.data(), ElementType::Fp32, r, c};
  }
};

KernelRef rms_norm() {
  return KernelRef(rms_norm_descriptor());
}

TEST(RmsNormCpu, NormalizesAHandComputedRow) {
  for (Provider provider : {Provider::Fused, Provider::Reference}) {
    Fixture f(1, 4);
    f.x = {1, 2, 3, 4};
    f.w = {1, 2, 1, 1};
    ASSERT_TRUE(rms_norm_forward_cpu(provider, f.forward()));
    const double rstd = 1.0 / std::sqrt(7.5 + 1e-6);  // mean of 1, 4, 9, 16
    EXPECT_FLOAT_EQ(f.rstd[0], static_cast<float>(rstd));
    EXPECT_FLOAT_EQ(f.y[0], static_cast<float>(rstd));
    EXPECT_FLOAT_EQ(f.y[1], static_cast<float>(2 * rstd * 2));
    EXPECT_FLOAT_EQ(f.y[3], static_cast<float>(4 * rstd));
    // dy = x / |x| direction: with w = 1, dy proportional to x gives dx = 0
    // (y's norm is fixed).
    f.w = {1, 1, 1, 1};
    ASSERT_TRUE(rms_norm_forward_cpu(provider, f.forward()));
    f.dy = {1, 2, 3, 4};
    std::vector<std::byte> workspace(rms_norm_backward_cpu_workspace_bytes(provider, f.rows, f.n));
    ASSERT_TRUE(rms_norm_backward_cpu(provider, f.backward(), workspace));
    for (float v : f.dx) EXPECT_NEAR(v, 0.0f, 1e-6f);
    // dweight = sum_rows(dy * x * rstd).
    EXPECT_FLOAT_EQ(f.dw[3], static_cast<float>(16 * rstd));
  }
}

TEST(RmsNormCpu, ChecksItsArgumentsBeforeAnyWork) {
  Fixture f(2, 8);
  auto forward = f.forward();
  forward.rstd.rows = 3;
  const auto bad = rms_norm_forward_cpu(Provider::Fused, forward);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "rms_norm forward: rstd must be 2 x 1, got 3 x 1");
  auto negative = f.forward();
  negative.eps = -1;
  EXPECT_FALSE(rms_norm_forward_cpu(Provider::Fused, negative));
  auto backward = f.backward();
  backward.dweight.data = nullptr;
  const auto missing = rms_norm_backward_cpu(Provider::Reference, backward, {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "rms_norm backward: dweight is missing (null data)");
  std::vector<std::byte> small(4);
  EXPECT_FALSE(rms_norm_backward_cpu(Provider::Fused, f.backward(), small));
  EXPECT_FALSE(validate_rms_norm_shape(1, kMaxRmsNormHidden + 1, DType::Fp32, 1e-6));
  EXPECT_FALSE(validate_rms_norm_shape(1, 16, DType::Fp16, 1e-6));
  EXPECT_TRUE(validate_rms_norm_shape(1, kMaxRmsNormHidden, DType::Bf16, 1e-6));
}

// The oracle's gradients against central differences of the loss sum(dy * y).
TEST(RmsNormOracle, GradientsMatchFiniteDifferences) {
  const std::int64_t rows = 2;
  const std::int64_t n = 5;
  const std::vector<double> x = {0.3, -1.2, 2.0, 0.7, -0.4, 1.5, 0.1, -0.8, 0.9, -2.2};
  const std::vector<double> w = {0.9, 1.1, -0.5, 1.3, 0.7};
  const std::vector<double> dy = {0.2, -0.7, 1.0, 0.4, -0.3, 0.6, -1.1, 0.5, 0.8, -0.2};
  const double eps = 1e-5;
  const auto loss = [&](const std::vector<double>& xs, const std::vector<double>& ws) {
    const auto y = oracle::rms_norm_forward(xs, ws, rows, n, eps).y;
    double total = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) total += dy[i] * y[i];
    return total;
  };
  const auto grads = oracle::rms_norm_backward(x, w, dy, rows, n, eps);
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto up = x;
    auto down = x;
    up[i] += h;
    down[i] -= h;
    EXPECT_NEAR(grads.dx[i], (loss(up, w) - loss(down, w)) / (2 * h), 1e-6) << "dx " << i;
  }
  for (std::size_t i = 0; i < w.size(); ++i) {
    auto up = w;
    auto down = w;
    up[i] += h;
    down[i] -= h;
    EXPECT_NEAR(grads.dweight[i], (loss(x, up) - loss(x, down)) / (2 * h), 1e-6) << "dw " << i;
  }
}

TEST(RmsNormKernel, TakesTheWorkloadLabelOfLigersImportedHistory) {
  // What runners/liger_csv.cpp makes of benchmark_rms_norm.py's rows: x_name H,
  // x_value 4096,
  // {"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-06}.
  const auto workload = core::Workload::from_label("h4096-bf16-eps1e-06-m2048");
  ASSERT_TRUE(workload);
  const auto spec = CaseSpec::from_workload(rms_norm(), *workload);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->rows, 2048);
  EXPECT_EQ(spec->cols, 4096);
  EXPECT_EQ(spec->dtype, DType::Bf16);
  EXPECT_DOUBLE_EQ(spec->eps, 1e-6);
  const core::Workload again = workload_of(rms_norm(), *spec);
  EXPECT_EQ(again.label(), "h4096-bf16-eps1e-06-m2048");
  EXPECT_EQ(again.digest(), workload->digest());
  CaseSpec other = *spec;
  other.eps = 1e-5;
  other.dtype = DType::Fp32;
  EXPECT_EQ(workload_of(rms_norm(), other).label(), "h4096-fp32-eps1e-05-m2048");
  for (const char* label : {"hidden4096-rows2048-fp32", "h4096-bf16-m2048", "h4096-bf16-eps1e-06",
                            "tokens16-vocab32-fp32", "h4096-bf16-eps1e-06-m2048-x1"}) {
    const auto w = core::Workload::from_label(label);
    ASSERT_TRUE(w) << label;
    EXPECT_FALSE(CaseSpec::from_workload(rms_norm(), *w)) << label;
  }
  EXPECT_EQ((CaseId{rms_norm(), Pass::Backward}.benchmark()), "rms_norm/backward");
}

TEST(RmsNormKernel, BytesMovedAndCasesAreCpuOnly) {
  CaseSpec spec;
  spec.rows = 8;
  spec.cols = 16;
  EXPECT_EQ(bytes_moved(CaseId{rms_norm(), Pass::Forward}, spec), 4 * (2 * 128 + 16) + 4 * 8);
  EXPECT_EQ(bytes_moved(CaseId{rms_norm(), Pass::Backward}, spec), 4 * (3 * 128 + 32) + 4 * 8);
  EXPECT_EQ(bytes_moved(CaseId{rms_norm(), Pass::Full}, spec),
            bytes_moved(CaseId{rms_norm(), Pass::Forward}, spec) +
                bytes_moved(CaseId{rms_norm(), Pass::Backward}, spec));
  int cpu = 0;
  for (const CaseId& id : all_cases()) {
    if (id.kernel != rms_norm()) continue;
    EXPECT_EQ(id.backend, Backend::Cpu);
    ++cpu;
  }
  EXPECT_EQ(cpu, 6);
  const auto cuda =
      create_case(CaseId{rms_norm(), Pass::Forward, Provider::Fused, Backend::Cuda}, spec);
  ASSERT_FALSE(cuda);
  EXPECT_EQ(cuda.error().code, core::ErrorCode::Unavailable);
  EXPECT_NE(cuda.error().message.find("rms_norm has no CUDA implementation"), std::string::npos);
}

TEST(RmsNormKernel, EveryCpuCaseMatchesTheOracleForAnyThreadCount) {
  for (const CaseId& id : cases_for(Backend::Cpu)) {
    if (id.kernel != rms_norm()) continue;
    std::uint64_t seed = 7;
    for (const DType dtype : {DType::Fp32, DType::Bf16}) {
      for (const CaseSpec& spec : testing::sweep(id.kernel, dtype)) {
        EXPECT_TRUE(testing::matches_oracle(id, spec, seed++));
      }
    }
    CaseSpec spec;
    spec.rows = 200;
    spec.cols = 3000;
    std::vector<std::vector<std::byte>> outputs;
    for (const int threads : {1, 3}) {
      set_cpu_threads(threads);
      auto c = create_case(id, spec);
      ASSERT_TRUE(c);
      ASSERT_TRUE((*c)->prepare(5));
      ASSERT_TRUE((*c)->run());
      const auto out = (*c)->outputs();
      ASSERT_TRUE(out);
      std::vector<std::byte> bytes;
      for (const auto& tensor : *out)
        bytes.insert(bytes.end(), tensor.bytes.begin(), tensor.bytes.end());
      outputs.push_back(std::move(bytes));
    }
    set_cpu_threads(0);
    EXPECT_EQ(outputs[0], outputs[1]) << id.name();
  }
}

}  // namespace
}  // namespace kernelwatch::kernels
