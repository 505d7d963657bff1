#include "kernels/cpu_threads.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/detail/cpu_parallel.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels {
namespace {

class CpuThreadsTest : public ::testing::Test {
 protected:
  void TearDown() override { set_cpu_threads(0); }
};

TEST_F(CpuThreadsTest, ZeroMeansHardwareConcurrency) {
  set_cpu_threads(0);
  EXPECT_EQ(cpu_threads(), std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  set_cpu_threads(3);
  EXPECT_EQ(cpu_threads(), 3);
  set_cpu_threads(-4);
  EXPECT_GE(cpu_threads(), 1);
}

TEST_F(CpuThreadsTest, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    set_cpu_threads(threads);
    std::vector<std::atomic<int>> hits(1000);
    detail::parallel_for(1000, [&](std::int64_t task) { hits[task].fetch_add(1); });
    for (const auto& hit : hits) ASSERT_EQ(hit.load(), 1) << threads << " threads";
    std::atomic<std::int64_t> covered{0};
    detail::parallel_blocks(1001, 100,
                            [&](std::int64_t begin, std::int64_t end) { covered += end - begin; });
    EXPECT_EQ(covered.load(), 1001);
  }
}

TEST_F(CpuThreadsTest, NestedCallsRunInline) {
  set_cpu_threads(4);
  std::atomic<int> inner{0};
  detail::parallel_for(
      8, [&](std::int64_t) { detail::parallel_for(8, [&](std::int64_t) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 64);
}

std::vector<HostTensor> run_outputs(const CaseId& id, const CaseSpec& spec) {
  auto instance = create_case(id, spec);
  EXPECT_TRUE(instance) << instance.error().message;
  EXPECT_TRUE((*instance)->prepare(7));
  EXPECT_TRUE((*instance)->run());
  return (*instance)->outputs().value();
}

// The CPU kernels' block structure depends on the shape only: any thread count gives the same
// bytes, reductions included.
TEST_F(CpuThreadsTest, ResultsDoNotDependOnTheThreadCount) {
  CaseSpec layer_norm;
  layer_norm.rows = 200;
  layer_norm.cols = 3000;
  CaseSpec tvd;
  tvd.rows = 37;
  tvd.cols = 5000;
  tvd.ignored = IgnoredRows::Some;
  for (Provider provider : {Provider::Fused, Provider::Reference}) {
    for (const auto& [kernel, spec] :
         {std::pair{KernelRef("layer_norm"), layer_norm}, std::pair{KernelRef("tvd"), tvd}}) {
      const CaseId id{kernel, Pass::Full, provider, Backend::Cpu};
      set_cpu_threads(1);
      const auto one = run_outputs(id, spec);
      set_cpu_threads(3);
      const auto three = run_outputs(id, spec);
      ASSERT_EQ(one.size(), three.size());
      for (std::size_t t = 0; t < one.size(); ++t) {
        EXPECT_EQ(one[t].bytes, three[t].bytes) << id.name() << " " << one[t].name;
      }
    }
  }
}

}  // namespace
}  // namespace kernelwatch::kernels
