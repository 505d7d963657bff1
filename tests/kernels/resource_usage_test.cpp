// The spill check: ptxas's report for every CUDA object of kw_kernels must show no stack frame,
// no spill stores or loads and no local memory. The parser is first shown to catch spills in
// real ptxas output, so the check can fail.
#include "tests/kernels/resource_usage.hpp"

#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace kernelwatch::kernels::testing {
namespace {

std::string sample(const std::string& name) {
  return kernelwatch::testing::read_file(std::filesystem::path(KW_KERNELS_TEST_DATA) / name);
}

TEST(PtxasReport, CleanKernelsHaveNoViolations) {
  const auto report = parse_ptxas_report(sample("ptxas_clean.txt"));
  ASSERT_EQ(report.functions.size(), 2u);
  EXPECT_TRUE(local_memory_violations(report).empty());
  const auto& block_sum = report.functions[0];
  EXPECT_EQ(block_sum.function, "_Z9block_sumPKfPf");
  EXPECT_TRUE(block_sum.entry);
  EXPECT_EQ(block_sum.arch, "sm_90");
  EXPECT_EQ(block_sum.registers, 22);
  EXPECT_EQ(block_sum.barriers, 1);
  EXPECT_EQ(block_sum.shared_bytes, 1024);
  EXPECT_EQ(report.functions[1].registers, 8);
}

TEST(PtxasReport, SpillsAreViolations) {
  const auto report = parse_ptxas_report(sample("ptxas_spills.txt"));
  ASSERT_EQ(report.functions.size(), 1u);
  const auto& heavy = report.functions[0];
  EXPECT_EQ(heavy.stack_frame_bytes, 1608);
  EXPECT_EQ(heavy.spill_store_bytes, 1596);
  EXPECT_EQ(heavy.spill_load_bytes, 3084);
  EXPECT_EQ(heavy.shared_bytes, 256);
  EXPECT_EQ(heavy.registers, 24);
  // ptxas's two warnings plus the function's own line.
  EXPECT_EQ(local_memory_violations(report).size(), 3u);
}

TEST(PtxasReport, LocalArrayWithoutSpillsIsAViolation) {
  const auto report = parse_ptxas_report(sample("ptxas_local_array.txt"));
  ASSERT_EQ(report.functions.size(), 2u);
  const auto violations = local_memory_violations(report);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].find("spill: 1024 bytes stack frame"), 0u) << violations[0];
}

TEST(KernelsResourceUsage, NoKernelUsesLocalMemory) {
#ifndef KW_KERNELS_PTXAS_DIR
  GTEST_SKIP() << "kw_kernels was built without CUDA: no ptxas report to check";
#else
  std::istringstream sources(KW_KERNELS_CUDA_SOURCES);
  std::string source;
  int kernels = 0;
  std::string tables;
  while (std::getline(sources, source, ',')) {
    const auto path = std::filesystem::path(KW_KERNELS_PTXAS_DIR) /
                      (std::filesystem::path(source).filename().string() + ".o.ptxas.txt");
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing: rebuild kw_kernels";
    const auto report = parse_ptxas_report(kernelwatch::testing::read_file(path));
    for (const auto& violation : local_memory_violations(report)) {
      ADD_FAILURE() << source << ": " << violation;
    }
    for (const auto& function : report.functions) kernels += function.entry ? 1 : 0;
    if (!report.functions.empty())
      tables += "### " + source + "\n\n" + resource_table(report) + "\n";
  }
  EXPECT_GE(kernels, 40) << "fewer kernels than layer_norm.cu and tvd.cu define";
  std::cout << tables;
#endif
}

}  // namespace
}  // namespace kernelwatch::kernels::testing
