#include "kernels/registry.hpp"

#include "kernels/catalogue.hpp"

#include <set>

#include <gtest/gtest.h>

namespace kernelwatch::kernels {
namespace {

TEST(Registry, EnumeratesEveryCaseOnce) {
  const auto cases = all_cases();
  // Per kernel: its passes x 2 providers x (CPU, and CUDA where it has one).
  std::size_t expected = 0;
  std::size_t expected_cpu = 0;
  for (const KernelDescriptor* kernel : catalogue()) {
    expected += kernel->passes.size() * 2 * (kernel->has_cuda ? 2 : 1);
    expected_cpu += kernel->passes.size() * 2;
  }
  EXPECT_EQ(cases.size(), expected);
  std::set<std::string> names;
  std::size_t founding = 0;
  for (const CaseId& id : cases) {
    names.insert(id.name());
    const auto parsed = parse_case_id(id.name());
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(*parsed, id);
    if (id.kernel == KernelRef("tvd") || id.kernel == KernelRef("layer_norm")) ++founding;
  }
  EXPECT_EQ(names.size(), expected);
  EXPECT_EQ(founding, 24u);
  EXPECT_TRUE(names.count("tvd/full/kernelwatch-reference/cuda"));
  EXPECT_TRUE(names.count("layer_norm/backward/kernelwatch-fused/cpu"));
  EXPECT_EQ(cases_for(Backend::Cpu).size(), expected_cpu);
  EXPECT_EQ((CaseId{KernelRef("tvd"), Pass::Backward}.benchmark()), "tvd/backward");
}

TEST(Registry, ParseCaseIdNamesTheBadPart) {
  EXPECT_FALSE(parse_case_id("tvd/forward"));
  const auto bad = parse_case_id("tvd/sideways/kernelwatch-fused/cpu");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("sideways"), std::string::npos);
  EXPECT_FALSE(parse_case_id("tvd/forward/liger/cpu"));
  EXPECT_FALSE(parse_case_id("tvd/forward/kernelwatch-fused/tpu"));
}

TEST(Registry, SpecFromWorkload) {
  const auto ln =
      CaseSpec::from_workload(core::Workload::layer_norm(4096, 1000, DType::Bf16, 1e-5));
  ASSERT_TRUE(ln);
  EXPECT_EQ(ln->rows, 4096);
  EXPECT_EQ(ln->cols, 1000);
  EXPECT_EQ(ln->dtype, DType::Bf16);
  EXPECT_EQ(ln->eps, 1e-5);
  const auto tvd = CaseSpec::from_workload(core::Workload::tvd(16384, 131072, DType::Fp32));
  ASSERT_TRUE(tvd);
  EXPECT_EQ(tvd->rows, 16384);
  EXPECT_EQ(tvd->cols, 131072);
  core::Workload other;
  other.opaque_label = "softmax-1024";
  EXPECT_FALSE(CaseSpec::from_workload(other));
}

TEST(Registry, ValidatesBeforeAllocating) {
  const CaseId tvd{KernelRef("tvd"), Pass::Full, Provider::Fused, Backend::Cpu};
  const CaseId ln{KernelRef("layer_norm"), Pass::Full, Provider::Fused, Backend::Cpu};
  CaseSpec spec;
  spec.rows = 0;
  spec.cols = 10;
  auto created = create_case(tvd, spec);
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, core::ErrorCode::InvalidArgument);
  EXPECT_NE(created.error().message.find("tvd/full/kernelwatch-fused/cpu"), std::string::npos);
  EXPECT_NE(created.error().message.find("at least one row"), std::string::npos);

  spec.rows = std::int64_t{1} << 40;
  spec.cols = std::int64_t{1} << 30;
  created = create_case(tvd, spec);
  ASSERT_FALSE(created);
  EXPECT_NE(created.error().message.find("overflows"), std::string::npos);

  spec.rows = 8;
  spec.cols = 65537;
  EXPECT_FALSE(create_case(ln, spec));
  spec.cols = 64;
  spec.dtype = DType::Fp16;
  EXPECT_FALSE(create_case(ln, spec));
  spec.dtype = DType::Fp32;
  spec.eps = 0.0;
  EXPECT_FALSE(create_case(ln, spec));
}

TEST(Registry, AFailedAllocationIsAnError) {
  CaseSpec spec;
  spec.rows = std::int64_t{1} << 31;
  spec.cols = 65536;  // 2^47 fp32 elements: valid sizes, 512 TiB of memory
  const auto created = create_case(
      CaseId{KernelRef("layer_norm"), Pass::Forward, Provider::Fused, Backend::Cpu}, spec);
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, core::ErrorCode::OutOfMemory);
  EXPECT_NE(created.error().message.find("tensor x"), std::string::npos) << created.error().message;
}

TEST(Registry, SixtyFourBitShapesValidateAndCountBytes) {
  CaseSpec spec;
  spec.rows = 16384;
  spec.cols = 131072;  // 2^31 elements
  EXPECT_TRUE(validate(KernelRef("tvd"), spec));
  const std::int64_t elements = std::int64_t{1} << 31;
  EXPECT_EQ(bytes_moved(CaseId{KernelRef("tvd"), Pass::Forward}, spec), 4 * 3 * elements + 4);
  EXPECT_EQ(bytes_moved(CaseId{KernelRef("tvd"), Pass::Backward}, spec), 4 * 2 * elements + 4);
  spec.dtype = DType::Bf16;
  spec.reduction = Reduction::None;
  spec.ignored = IgnoredRows::Some;
  EXPECT_EQ(bytes_moved(CaseId{KernelRef("tvd"), Pass::Full}, spec),
            (2 * 3 * elements + 8 * 16384 + 4 * elements) + (2 * 2 * elements + 4 * elements));
}

TEST(Registry, LayerNormBandwidthFloor) {
  CaseSpec spec;
  spec.rows = 4096;
  spec.cols = 4096;
  const std::int64_t mn = 4096 * 4096;
  EXPECT_EQ(bytes_moved(CaseId{KernelRef("layer_norm"), Pass::Forward}, spec),
            4 * (2 * mn + 2 * 4096) + 8 * 4096);
  EXPECT_EQ(bytes_moved(CaseId{KernelRef("layer_norm"), Pass::Backward}, spec),
            4 * (3 * mn + 3 * 4096) + 8 * 4096);
  EXPECT_EQ(bytes_moved(CaseId{KernelRef("layer_norm"), Pass::Full}, spec),
            4 * (5 * mn + 5 * 4096) + 16 * 4096);
}

TEST(Registry, CudaBackendSaysWhyItIsUnavailable) {
  const auto status = backend_available(Backend::Cuda);
  EXPECT_TRUE(backend_available(Backend::Cpu));
  if (status) GTEST_SKIP() << "a GPU is present; the gpu-labelled tests cover it";
  EXPECT_EQ(status.error().code, core::ErrorCode::Unavailable);
  const std::string& message = status.error().message;
  EXPECT_TRUE(message.find("no GPU") != std::string::npos ||
              message.find("not built with CUDA") != std::string::npos)
      << message;
  CaseSpec spec;
  spec.rows = 4;
  spec.cols = 4;
  const auto created =
      create_case(CaseId{KernelRef("tvd"), Pass::Forward, Provider::Fused, Backend::Cuda}, spec);
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, core::ErrorCode::Unavailable);
}

TEST(Registry, CaseTensorsFollowThePass) {
  CaseSpec spec;
  spec.rows = 3;
  spec.cols = 5;
  spec.ignored = IgnoredRows::Some;
  const auto names = [&](KernelRef kernel, Pass pass, bool outputs) {
    auto instance = create_case(CaseId{kernel, pass, Provider::Fused, Backend::Cpu}, spec);
    EXPECT_TRUE(instance);
    EXPECT_TRUE((*instance)->prepare(1));
    EXPECT_TRUE((*instance)->run());
    EXPECT_EQ((*instance)->stream(), nullptr);
    auto tensors = outputs ? (*instance)->outputs() : (*instance)->inputs();
    EXPECT_TRUE(tensors);
    std::vector<std::string> result;
    for (const auto& tensor : *tensors) result.push_back(tensor.name);
    return result;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(KernelRef("layer_norm"), Pass::Forward, true), (V{"y", "mean", "rstd"}));
  EXPECT_EQ(names(KernelRef("layer_norm"), Pass::Backward, true), (V{"dx", "dweight", "dbias"}));
  EXPECT_EQ(names(KernelRef("layer_norm"), Pass::Backward, false),
            (V{"x", "weight", "bias", "dy", "mean", "rstd"}));
  EXPECT_EQ(names(KernelRef("layer_norm"), Pass::Full, true),
            (V{"y", "mean", "rstd", "dx", "dweight", "dbias"}));
  EXPECT_EQ(names(KernelRef("tvd"), Pass::Forward, true), (V{"loss", "grad"}));
  EXPECT_EQ(names(KernelRef("tvd"), Pass::Forward, false), (V{"p", "q", "labels"}));
  EXPECT_EQ(names(KernelRef("tvd"), Pass::Backward, false),
            (V{"p", "q", "labels", "grad_output", "grad"}));
  EXPECT_EQ(names(KernelRef("tvd"), Pass::Full, true), (V{"loss", "grad", "dp"}));
}

TEST(Registry, InputsArePureFunctionsOfTheSeed) {
  CaseSpec spec;
  spec.rows = 6;
  spec.cols = 33;
  spec.ignored = IgnoredRows::Some;
  const auto inputs = [&](std::uint64_t seed) {
    auto instance =
        create_case(CaseId{KernelRef("tvd"), Pass::Full, Provider::Reference, Backend::Cpu}, spec);
    EXPECT_TRUE((*instance)->prepare(seed));
    return (*instance)->inputs().value();
  };
  const auto a = inputs(11);
  const auto b = inputs(11);
  const auto c = inputs(12);
  ASSERT_EQ(a.size(), 4u);
  for (std::size_t t = 0; t < a.size(); ++t) EXPECT_EQ(a[t].bytes, b[t].bytes) << a[t].name;
  EXPECT_NE(a[0].bytes, c[0].bytes);
  // p rows are probability distributions; labels ignore rows 1 and 5.
  double sum = 0.0;
  for (std::int64_t i = 0; i < 33; ++i) sum += a[0].value(i);
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_EQ(a[2].value(1), -100.0);
  EXPECT_EQ(a[2].value(5), -100.0);
  EXPECT_GE(a[2].value(0), 0.0);
}

}  // namespace
}  // namespace kernelwatch::kernels
