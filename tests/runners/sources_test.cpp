// The catalogue of run sources: every source kernelwatch produces is registered once, with what it
// declares about its runs; a source it does not produce (imported history) is not in it.
#include "runners/sources.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kernels/harness/record.hpp"
#include "runners/command.hpp"
#include "runners/liger_bench.hpp"
#include "runners/liger_scripts.hpp"

namespace kernelwatch::runners {
namespace {

TEST(RunSources, EachSourceKernelwatchProducesIsRegisteredOnce) {
  std::set<std::string> seen;
  for (const RunSource& s : run_sources()) {
    EXPECT_TRUE(seen.insert(std::string(s.source)).second) << s.source << " registered twice";
  }
  for (const std::string_view source :
       {kernels::kHarnessSource, kLigerBenchSource, kCommandSource, kLigerScriptsSource}) {
    const RunSource* found = find_run_source(source);
    ASSERT_NE(found, nullptr) << source;
    EXPECT_EQ(found->source, source);
    // Each produces the next run of its keys: a breach waits for it.
    EXPECT_TRUE(found->confirmed_by_next_run) << source;
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(find_run_source(kLigerBenchSource)->runner, kLigerBenchRunner);
  EXPECT_EQ(find_run_source(kernels::kHarnessSource)->runner, "");
}

TEST(RunSources, ImportedAndPostedSourcesAreNotKernelwatchs) {
  EXPECT_EQ(find_run_source("liger-kernel-bench"), nullptr);  // imported Liger CSV
  EXPECT_EQ(find_run_source("engine-test"), nullptr);
  EXPECT_EQ(find_run_source(""), nullptr);
}

}  // namespace
}  // namespace kernelwatch::runners
