// The catalogue of kernelwatch's own kernels: one KernelDescriptor per folder under kernels/
// (kernels/tvd/, kernels/layer_norm/, ...), which is everything the rest of kernelwatch knows of a
// kernel: its name and passes, how a workload label becomes a shape, the bytes a pass must move,
// the tensors of a case and how their inputs are filled, its CPU and CUDA entry points and its
// float64 oracle. Nothing outside a kernel's folder asks which kernel it is: the harness, the
// config, the daemon and the CLI go through the descriptor.
//
// Adding a kernel: a folder kernels/<name>/ whose sources define
// `const KernelDescriptor& <name>_descriptor()`, and its name in KERNELWATCH_KERNELS in
// kernels/CMakeLists.txt (the registration line). Its implementation digest covers its own
// folder and the shared sources, never another kernel's folder (docs/KERNELS.md).
// Plain C++ and core/ only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/key.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels {

// Input: filled from the seed. State: the forward output a backward-only pass reads (prepare()
// computes it). Output: what the pass writes. Scratch: written but not reported.
enum class Role { Input, State, Output, Scratch };

struct TensorPlan {
  std::string name;
  ElementType type = ElementType::Fp32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Role role = Role::Input;

  [[nodiscard]] std::size_t bytes() const {
    return static_cast<std::size_t>(rows * cols) * element_size(type);
  }
};

// What a backend hands a kernel's entry point for one pass.
struct PassArgs {
  Provider provider = Provider::Fused;
  const CaseSpec* spec = nullptr;
  // A tensor of the case's plan by name, in the backend's memory; data == nullptr when absent.
  std::function<TensorRef(std::string_view)> tensor;
  void* workspace = nullptr;  // host (CPU) or device (CUDA) scratch of workspace_bytes()
  std::size_t workspace_bytes = 0;
  void* stream = nullptr;  // the cudaStream_t of a CUDA case; nullptr on the CPU
  int sm_count = 1;        // CUDA: the device's multiprocessor count
};

// A kernel's entry points on one backend. workspace_bytes covers every pass of the case.
struct BackendOps {
  std::size_t (*workspace_bytes)(Provider provider, const CaseSpec& spec, int sm_count) = nullptr;
  core::Status (*forward)(const PassArgs& args) = nullptr;
  core::Status (*backward)(const PassArgs& args) = nullptr;
};

using ExpectedOutputs = std::map<std::string, std::vector<double>>;

// The kernel's float64 oracle: the expected value of every output tensor of a pass from the
// case's host inputs; error scales for outputs computed by cancelling sums (optional); and the
// shapes and options the provider tests sweep.
struct Oracle {
  ExpectedOutputs (*expected)(Pass pass, const CaseSpec& spec,
                              const std::vector<HostTensor>& inputs) = nullptr;
  std::map<std::string, double> (*error_scales)(Pass pass, const CaseSpec& spec,
                                                const std::vector<HostTensor>& inputs) = nullptr;
  std::vector<CaseSpec> (*sweep)(DType dtype) = nullptr;
};

// The shape `kernelwatch bench` runs without --workload: the names of its two axes as command
// line flags (--rows/--hidden, --tokens/--vocab) and their defaults on a GPU and on a CPU (shapes
// that finish in seconds on 2 cores).
struct BenchShape {
  std::string_view rows_flag;  // what CaseSpec::rows is: "rows", "tokens"
  std::string_view cols_flag;  // what CaseSpec::cols is: "hidden", "vocab"
  std::int64_t gpu_rows = 0;
  std::int64_t gpu_cols = 0;
  std::int64_t cpu_rows = 0;
  std::int64_t cpu_cols = 0;
};

struct KernelDescriptor {
  std::string_view name;              // "layer_norm": the benchmark's first part
  std::string_view title;             // "LayerNorm", a record's title
  std::string_view example_workload;  // "hidden2048-rows2048-fp32", for messages
  std::vector<Pass> passes;           // the passes it times
  BenchShape bench_shape;
  // The case shape of one of its workload labels; InvalidArgument when the workload is not one
  // of this kernel's. workload() is the inverse (the label of a record).
  core::Result<CaseSpec> (*parse_workload)(const core::Workload& workload) = nullptr;
  core::Workload (*workload)(const CaseSpec& spec) = nullptr;
  // Shape, dtype and option checks, before anything is allocated.
  core::Status (*validate)(const CaseSpec& spec) = nullptr;
  // The least bytes a forward or backward pass must move: every input read once, every output
  // written once (full = forward + backward). The bandwidth floor of a run.
  std::int64_t (*forward_bytes)(const CaseSpec& spec) = nullptr;
  std::int64_t (*backward_bytes)(const CaseSpec& spec) = nullptr;
  // The tensors of a case in a fixed order (spec is valid), and an Input tensor's host bytes as
  // a pure function of (spec, seed, name, element index).
  std::vector<TensorPlan> (*plan)(Pass pass, const CaseSpec& spec) = nullptr;
  void (*fill_input)(const CaseSpec& spec, const TensorPlan& tensor, std::uint64_t seed,
                     void* host) = nullptr;
  BackendOps cpu;
  bool has_cuda = false;             // a CUDA implementation exists (cases_for(Cuda) lists it)
  const BackendOps* cuda = nullptr;  // nullptr when absent or the library has no CUDA
  Oracle oracle;
};

// Every registered kernel, in registration order.
[[nodiscard]] const std::vector<const KernelDescriptor*>& catalogue();
// The kernel named `name`; InvalidArgument listing the known names otherwise.
[[nodiscard]] core::Result<KernelRef> find_kernel(std::string_view name);
// "tvd, layer_norm, ...": the registered names, for messages.
[[nodiscard]] std::string kernel_names();
// "sha256:<hex>": the digest of the kernel's own sources and the shared ones (docs/KERNELS.md).
[[nodiscard]] std::string_view source_digest(KernelRef kernel);

}  // namespace kernelwatch::kernels
