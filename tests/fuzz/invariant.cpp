#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_target.hpp"

namespace kernelwatch::fuzz {

void invariant_failed(const char* what) {
  std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
  std::abort();
}

}  // namespace kernelwatch::fuzz
