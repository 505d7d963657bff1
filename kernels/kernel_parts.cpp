// The parts the kernels' descriptors share (detail/kernel_parts.hpp).
#include "kernels/detail/kernel_parts.hpp"

#include <algorithm>

namespace kernelwatch::kernels::detail {

tl::unexpected<core::Error> wrong_workload(const core::Workload& workload,
                                           std::string_view expected) {
  // Appended, not `"\"" + label + ...`: GCC 12 at -O3 warns of an overlapping memcpy there.
  std::string message = workload.label();
  message.insert(0, 1, '"');
  message.append("\" is not ");
  message.append(expected);
  return core::fail(core::ErrorCode::InvalidArgument, std::move(message));
}

std::int64_t element_bytes(DType dtype) {
  return dtype == DType::Bf16 ? 2 : 4;
}

PassPlan::PassPlan(Pass pass, const CaseSpec& spec)
    : type(spec.dtype == DType::Bf16 ? ElementType::Bf16 : ElementType::Fp32),
      rows(spec.rows),
      cols(spec.cols),
      forward(pass != Pass::Backward),
      backward(pass != Pass::Forward) {}

void PassPlan::input(std::string name, std::int64_t tensor_rows, std::int64_t tensor_cols) {
  input(std::move(name), type, tensor_rows, tensor_cols);
}

void PassPlan::input(std::string name, ElementType tensor_type, std::int64_t tensor_rows,
                     std::int64_t tensor_cols) {
  tensors_.push_back({std::move(name), tensor_type, tensor_rows, tensor_cols, Role::Input});
}

void PassPlan::saved(std::string name, ElementType tensor_type, std::int64_t tensor_rows,
                     std::int64_t tensor_cols) {
  tensors_.push_back({std::move(name), tensor_type, tensor_rows, tensor_cols,
                      forward ? Role::Output : Role::State});
}

void PassPlan::written(std::string name, ElementType tensor_type, std::int64_t tensor_rows,
                       std::int64_t tensor_cols) {
  tensors_.push_back({std::move(name), tensor_type, tensor_rows, tensor_cols,
                      forward ? Role::Output : Role::Scratch});
}

void PassPlan::output(std::string name, std::int64_t tensor_rows, std::int64_t tensor_cols) {
  tensors_.push_back({std::move(name), type, tensor_rows, tensor_cols, Role::Output});
}

std::vector<TensorPlan> row_norm_plan(Pass pass, const CaseSpec& spec,
                                      std::initializer_list<std::string_view> params,
                                      std::initializer_list<std::string_view> stats) {
  PassPlan p(pass, spec);
  const std::int64_t m = p.rows;
  const std::int64_t n = p.cols;
  p.input("x", m, n);
  p.input("weight", 1, n);
  for (std::string_view param : params) p.input(std::string(param), 1, n);
  if (p.backward) p.input("dy", m, n);
  p.written("y", p.type, m, n);
  for (std::string_view stat : stats) p.saved(std::string(stat), ElementType::Fp32, m, 1);
  if (p.backward) {
    p.output("dx", m, n);
    p.output("dweight", 1, n);
    for (std::string_view param : params) {
      // Appended, not `"d" + ...`: GCC 12 at -O3 warns of an overlapping memcpy there.
      std::string gradient("d");
      gradient += param;
      p.output(std::move(gradient), 1, n);
    }
  }
  return std::move(p).tensors();
}

std::span<std::byte> cpu_workspace(const PassArgs& args) {
  return {static_cast<std::byte*>(args.workspace), args.workspace_bytes};
}

std::vector<double> input_values(const std::vector<HostTensor>& inputs, std::string_view name) {
  const HostTensor* tensor = find_tensor(inputs, name);
  return tensor == nullptr ? std::vector<double>{} : tensor->values();
}

double largest(const std::vector<double>& terms) {
  double largest = 0.0;
  for (double term : terms) largest = std::max(largest, term);
  return largest;
}

std::vector<CaseSpec> sweep_shapes(DType dtype,
                                   std::span<const std::pair<std::int64_t, std::int64_t>> shapes) {
  std::vector<CaseSpec> specs;
  for (const auto& [rows, cols] : shapes) {
    CaseSpec spec;
    spec.rows = rows;
    spec.cols = cols;
    spec.dtype = dtype;
    specs.push_back(spec);
  }
  return specs;
}

}  // namespace kernelwatch::kernels::detail
