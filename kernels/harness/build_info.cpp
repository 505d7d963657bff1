#include "kernels/harness/record.hpp"
#include "kernelwatch_build_info.hpp"

namespace kernelwatch::kernels {

BuildInfo current_build() {
  return BuildInfo{build_info::kVersion, build_info::kGitCommit, build_info::kKernelSourceDigest};
}

}  // namespace kernelwatch::kernels
