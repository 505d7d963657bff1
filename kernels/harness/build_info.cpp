#include "kernels/catalogue.hpp"
#include "kernels/harness/record.hpp"
#include "kernelwatch_build_info.hpp"

namespace kernelwatch::kernels {

BuildInfo current_build(KernelRef kernel) {
  return BuildInfo{build_info::kVersion, build_info::kGitCommit,
                   std::string(source_digest(kernel))};
}

}  // namespace kernelwatch::kernels
