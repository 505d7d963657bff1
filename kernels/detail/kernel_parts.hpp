// Private to kernels/: the parts every kernel's descriptor (kernels/<name>/<name>_kernel.cpp) is
// assembled from where the logic is the same for all: the message for a workload of another
// form, the tensor plan of a pass (types, shapes and roles of what the forward writes), the
// storage size, the CPU workspace of a pass, the oracle's inputs and the cancelling-sum scale,
// and the sweep's shapes. What a kernel's tensors, bytes, inputs and oracle are stays in its
// folder. Plain C++ and core/ only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "kernels/catalogue.hpp"

namespace kernelwatch::kernels::detail {

// InvalidArgument: "\"<label>\" is not <expected>" (expected: "an rms_norm workload like ...").
[[nodiscard]] tl::unexpected<core::Error> wrong_workload(const core::Workload& workload,
                                                         std::string_view expected);

// Bytes of one stored element of `dtype`: 2 for bf16, 4 for fp32.
[[nodiscard]] std::int64_t element_bytes(DType dtype);

// The tensors of one pass, in the order they are added. Its type, rows and cols are the spec's;
// forward and backward say which halves the pass runs.
class PassPlan {
 public:
  PassPlan(Pass pass, const CaseSpec& spec);

  const ElementType type;  // fp32 or bf16, the spec's storage
  const std::int64_t rows;
  const std::int64_t cols;
  const bool forward;
  const bool backward;

  // Filled from the seed.
  void input(std::string name, std::int64_t tensor_rows, std::int64_t tensor_cols);
  void input(std::string name, ElementType tensor_type, std::int64_t tensor_rows,
             std::int64_t tensor_cols);
  // What the forward writes and a backward reads: an output when the forward is timed, saved
  // state (computed by prepare()) for the backward pass.
  void saved(std::string name, ElementType tensor_type, std::int64_t tensor_rows,
             std::int64_t tensor_cols);
  // What the forward writes and nothing reads: an output when timed, scratch for the backward.
  void written(std::string name, ElementType tensor_type, std::int64_t tensor_rows,
               std::int64_t tensor_cols);
  // What the pass writes and reports.
  void output(std::string name, std::int64_t tensor_rows, std::int64_t tensor_cols);

  [[nodiscard]] std::vector<TensorPlan> tensors() && { return std::move(tensors_); }

 private:
  std::vector<TensorPlan> tensors_;
};

// The tensors of a normalization over rows x hidden (LayerNorm, RMSNorm), in this order: inputs
// x, weight and `params` (1 x hidden each), dy for a backward; y, then the fp32 per-row `stats`
// (rows x 1) the backward reads; for a backward dx, dweight and "d" + each of `params`.
[[nodiscard]] std::vector<TensorPlan> row_norm_plan(Pass pass, const CaseSpec& spec,
                                                    std::initializer_list<std::string_view> params,
                                                    std::initializer_list<std::string_view> stats);

// The workspace a CPU pass is handed.
[[nodiscard]] std::span<std::byte> cpu_workspace(const PassArgs& args);

// The float64 values of the input `name`; empty when the case has no such tensor.
[[nodiscard]] std::vector<double> input_values(const std::vector<HostTensor>& inputs,
                                               std::string_view name);

// The largest of an oracle's per-element term sizes (0 for none): the error scale of an output
// computed by a cancelling sum.
[[nodiscard]] double largest(const std::vector<double>& terms);

// One spec per (rows, cols) shape, of `dtype` and the default options, in order.
[[nodiscard]] std::vector<CaseSpec> sweep_shapes(
    DType dtype, std::span<const std::pair<std::int64_t, std::int64_t>> shapes);

}  // namespace kernelwatch::kernels::detail

// A descriptor's `cuda`: &ops() where the library is built with CUDA (ops, the kernel's CUDA
// entry points in its *.cu, exists only then), nullptr otherwise.
#ifdef KERNELWATCH_KERNELS_CUDA
#define KW_CUDA_OPS(ops) (&(ops)())
#else
#define KW_CUDA_OPS(ops) nullptr
#endif
