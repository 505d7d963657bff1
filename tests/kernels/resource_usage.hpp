// Reads ptxas's `-Xptxas -v` report (kept per CUDA object by kernels/tools/capture_ptxas.sh)
// into per-kernel registers, shared memory, stack and spills, and lists every use of local
// memory. Used by the spill check; plain C++ and the standard library.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kernelwatch::kernels::testing {

struct KernelResources {
  std::string function;  // mangled name
  std::string arch;      // "sm_90"
  bool entry = false;    // a __global__ kernel (not a called device function)
  int registers = 0;
  int barriers = 0;
  int shared_bytes = 0;  // static shared memory ("N bytes smem")
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int cumulative_stack_bytes = 0;
};

struct PtxasReport {
  std::vector<KernelResources> functions;
  std::vector<std::string> local_memory_warnings;  // ptxas's own spill / lmem diagnostics
};

[[nodiscard]] PtxasReport parse_ptxas_report(std::string_view text);

// One message per function that uses local memory (stack frame, spills, cumulative stack) and
// per ptxas local-memory diagnostic; empty when the report is clean.
[[nodiscard]] std::vector<std::string> local_memory_violations(const PtxasReport& report);

// A Markdown table of the entry kernels (demangled name, registers, static shared memory,
// stack, spills), for docs/KERNELS.md.
[[nodiscard]] std::string resource_table(const PtxasReport& report);

}  // namespace kernelwatch::kernels::testing
