// The catalogue: every registered kernel's descriptor is complete and consistent (so a new
// kernel's folder is checked by these tests without a line of its own), names resolve, and each
// kernel has its own source digest.
#include "kernels/catalogue.hpp"

#include <algorithm>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "kernels/harness/record.hpp"

namespace kernelwatch::kernels {
namespace {

TEST(Catalogue, HoldsTheFoundingKernelsFirstFoundByName) {
  ASSERT_GE(catalogue().size(), 2u);
  EXPECT_EQ(catalogue()[0]->name, "tvd");
  EXPECT_EQ(catalogue()[1]->name, "layer_norm");
  EXPECT_EQ(KernelRef("tvd").name(), "tvd");
  EXPECT_EQ(KernelRef("layer_norm"), *find_kernel("layer_norm"));
  EXPECT_EQ(&*KernelRef("tvd"), catalogue()[0]);
  EXPECT_NE(KernelRef("layer_norm"), KernelRef("tvd"));
}

TEST(Catalogue, EveryDescriptorIsComplete) {
  std::set<std::string_view> names;
  for (const KernelDescriptor* kernel : catalogue()) {
    SCOPED_TRACE(std::string(kernel->name));
    EXPECT_TRUE(names.insert(kernel->name).second) << "registered twice";
    EXPECT_TRUE(std::regex_match(std::string(kernel->name), std::regex("[a-z][a-z0-9_]*")));
    EXPECT_FALSE(kernel->title.empty());
    EXPECT_FALSE(kernel->passes.empty());
    EXPECT_NE(kernel->parse_workload, nullptr);
    EXPECT_NE(kernel->workload, nullptr);
    EXPECT_NE(kernel->validate, nullptr);
    EXPECT_NE(kernel->forward_bytes, nullptr);
    EXPECT_NE(kernel->backward_bytes, nullptr);
    EXPECT_NE(kernel->plan, nullptr);
    EXPECT_NE(kernel->fill_input, nullptr);
    EXPECT_NE(kernel->cpu.workspace_bytes, nullptr);
    EXPECT_NE(kernel->cpu.forward, nullptr);
    EXPECT_NE(kernel->cpu.backward, nullptr);
    EXPECT_NE(kernel->oracle.expected, nullptr);
    EXPECT_NE(kernel->oracle.sweep, nullptr);
    if (kernel->cuda != nullptr) {
      EXPECT_TRUE(kernel->has_cuda);
      EXPECT_NE(kernel->cuda->forward, nullptr);
      EXPECT_NE(kernel->cuda->backward, nullptr);
    }
    EXPECT_FALSE(kernel->bench_shape.rows_flag.empty());
    EXPECT_FALSE(kernel->bench_shape.cols_flag.empty());
  }
}

TEST(Catalogue, ExampleAndBenchWorkloadsRoundTripThroughTheirLabels) {
  for (const KernelDescriptor* kernel : catalogue()) {
    SCOPED_TRACE(std::string(kernel->name));
    const KernelRef ref(*kernel);
    const auto workload = core::Workload::from_label(kernel->example_workload);
    ASSERT_TRUE(workload) << workload.error().message;
    const auto spec = CaseSpec::from_workload(ref, *workload);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_TRUE(validate(ref, *spec));
    EXPECT_EQ(workload_of(ref, *spec).label(), kernel->example_workload);
    EXPECT_EQ(workload_of(ref, *spec).digest(), workload->digest());
    // No other kernel takes its workloads.
    for (const KernelDescriptor* other : catalogue()) {
      if (other != kernel) {
        EXPECT_FALSE(other->parse_workload(*workload)) << other->name;
      }
    }
    const auto found = CaseSpec::from_workload(*workload);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->rows, spec->rows);
    for (const bool gpu : {false, true}) {
      CaseSpec bench = *spec;
      bench.rows = gpu ? kernel->bench_shape.gpu_rows : kernel->bench_shape.cpu_rows;
      bench.cols = gpu ? kernel->bench_shape.gpu_cols : kernel->bench_shape.cpu_cols;
      EXPECT_TRUE(validate(ref, bench));
      const auto again = core::Workload::from_label(workload_of(ref, bench).label());
      ASSERT_TRUE(again);
      const auto parsed = CaseSpec::from_workload(ref, *again);
      ASSERT_TRUE(parsed) << parsed.error().message;
      EXPECT_EQ(parsed->rows, bench.rows);
      EXPECT_EQ(parsed->cols, bench.cols);
    }
  }
}

TEST(Catalogue, EveryPassPlansItsInputsAndOutputsAndTheOracleCoversTheOutputs) {
  for (const KernelDescriptor* kernel : catalogue()) {
    const KernelRef ref(*kernel);
    const CaseSpec spec = kernel->oracle.sweep(DType::Fp32).front();
    for (const Pass pass : kernel->passes) {
      SCOPED_TRACE(std::string(kernel->name) + "/" + std::string(core::to_string(pass)));
      std::vector<std::string> outputs;
      bool inputs = false;
      for (const TensorPlan& tensor : kernel->plan(pass, spec)) {
        inputs = inputs || tensor.role == Role::Input;
        if (tensor.role == Role::Output) outputs.push_back(tensor.name);
      }
      EXPECT_TRUE(inputs);
      ASSERT_FALSE(outputs.empty());
      auto c = create_case(CaseId{ref, pass, Provider::Fused, Backend::Cpu}, spec);
      ASSERT_TRUE(c) << c.error().message;
      ASSERT_TRUE((*c)->prepare(3));
      const auto host_inputs = (*c)->inputs();
      ASSERT_TRUE(host_inputs);
      const ExpectedOutputs expected = kernel->oracle.expected(pass, spec, *host_inputs);
      std::vector<std::string> covered;
      for (const auto& [name, values] : expected) covered.push_back(name);
      std::sort(outputs.begin(), outputs.end());
      EXPECT_EQ(covered, outputs);
      EXPECT_GT(bytes_moved(CaseId{ref, pass}, spec), 0);
    }
  }
}

TEST(Catalogue, UnknownNamesListTheKnownOnes) {
  const auto missing = find_kernel("softmax");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "unknown kernel \"softmax\" (known: " + kernel_names() + ")");
  EXPECT_EQ(kernel_names().rfind("tvd, layer_norm", 0), 0u);
  // A name the code spells must be registered: a misspelling is a bug, never a kernel.
  EXPECT_ANY_THROW((void)KernelRef("softmax"));
  const auto bad = parse_case_id("softmax/forward/kernelwatch-fused/cpu");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown kernel \"softmax\""), std::string::npos);
}

TEST(Catalogue, EachKernelHasItsOwnSourceDigest) {
  std::set<std::string_view> digests;
  for (const KernelDescriptor* kernel : catalogue()) {
    const std::string_view digest = source_digest(KernelRef(*kernel));
    EXPECT_TRUE(std::regex_match(std::string(digest), std::regex("sha256:[0-9a-f]{64}")))
        << kernel->name << ": " << digest;
    EXPECT_TRUE(digests.insert(digest).second) << kernel->name << " shares its digest";
    EXPECT_EQ(current_build(KernelRef(*kernel)).source_digest, digest);
  }
}

}  // namespace
}  // namespace kernelwatch::kernels
