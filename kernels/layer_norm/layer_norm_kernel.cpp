// LayerNorm's entry in the catalogue: its workload form, bandwidth floor, tensors, seeded inputs,
// CPU and CUDA entry points and oracle.
#include <algorithm>

#include "kernels/detail/fill.hpp"
#include "kernels/layer_norm/layer_norm.hpp"
#include "kernels/layer_norm/oracle.hpp"

namespace kernelwatch::kernels {
namespace {

using core::ErrorCode;

core::Result<CaseSpec> parse_workload(const core::Workload& workload) {
  if (workload.kernel != core::Kernel::LayerNorm) {
    // Appended, not `"\"" + label + ...`: GCC 12 at -O3 warns of an overlapping memcpy there.
    std::string message = workload.label();
    message.insert(0, 1, '"');
    message.append("\" is not a layer_norm workload like \"hidden2048-rows2048-fp32\"");
    return core::fail(ErrorCode::InvalidArgument, message);
  }
  CaseSpec spec;
  spec.rows = workload.rows;
  spec.cols = workload.hidden;
  spec.dtype = workload.dtype;
  spec.eps = workload.eps;
  return spec;
}

core::Workload workload_of(const CaseSpec& spec) {
  return core::Workload::layer_norm(spec.rows, spec.cols, spec.dtype, spec.eps);
}

core::Status validate_spec(const CaseSpec& spec) {
  return validate_layer_norm_shape(spec.rows, spec.cols, spec.dtype, spec.eps);
}

// Read x, weight, bias; write y, mean, rstd.
std::int64_t forward_bytes(const CaseSpec& spec) {
  const std::int64_t s = spec.dtype == DType::Bf16 ? 2 : 4;
  return s * (2 * spec.rows * spec.cols + 2 * spec.cols) + 8 * spec.rows;
}

// Read dy, x, weight, mean, rstd; write dx, dweight, dbias.
std::int64_t backward_bytes(const CaseSpec& spec) {
  const std::int64_t s = spec.dtype == DType::Bf16 ? 2 : 4;
  return s * (3 * spec.rows * spec.cols + 3 * spec.cols) + 8 * spec.rows;
}

std::vector<TensorPlan> plan(Pass pass, const CaseSpec& spec) {
  const ElementType t = spec.dtype == DType::Bf16 ? ElementType::Bf16 : ElementType::Fp32;
  const std::int64_t m = spec.rows;
  const std::int64_t n = spec.cols;
  const bool forward = pass != Pass::Backward;
  const bool backward = pass != Pass::Forward;
  // What the forward writes: outputs when timed, saved state (or scratch) for a backward pass.
  const Role saved = forward ? Role::Output : Role::State;
  const Role unused = forward ? Role::Output : Role::Scratch;
  std::vector<TensorPlan> tensors;
  tensors.push_back({"x", t, m, n, Role::Input});
  tensors.push_back({"weight", t, 1, n, Role::Input});
  tensors.push_back({"bias", t, 1, n, Role::Input});
  if (backward) tensors.push_back({"dy", t, m, n, Role::Input});
  tensors.push_back({"y", t, m, n, unused});
  tensors.push_back({"mean", ElementType::Fp32, m, 1, saved});
  tensors.push_back({"rstd", ElementType::Fp32, m, 1, saved});
  if (backward) {
    tensors.push_back({"dx", t, m, n, Role::Output});
    tensors.push_back({"dweight", t, 1, n, Role::Output});
    tensors.push_back({"dbias", t, 1, n, Role::Output});
  }
  return tensors;
}

// The input streams (the numbers the founding kernels have always used).
enum Stream : std::uint64_t { kX = 1, kWeight, kBias, kDy };

void fill_input(const CaseSpec&, const TensorPlan& tensor, std::uint64_t seed, void* host) {
  const std::string& name = tensor.name;
  if (name == "x") {
    detail::fill_uniform(tensor, seed, kX, -0.5, 4.0, host);  // mean far from 0: the centring
  } else if (name == "weight") {
    detail::fill_uniform(tensor, seed, kWeight, 0.5, 1.0, host);
  } else if (name == "bias") {
    detail::fill_uniform(tensor, seed, kBias, -0.5, 1.0, host);
  } else {
    KW_ASSERT(name == "dy", "layer_norm fill_input: not an input tensor");
    detail::fill_uniform(tensor, seed, kDy, -1.0, 2.0, host);
  }
}

const BackendOps kCpu{
    [](Provider provider, const CaseSpec& s, int) {
      return layer_norm_backward_cpu_workspace_bytes(provider, s.rows, s.cols);
    },
    [](const PassArgs& a) {
      return layer_norm_forward_cpu(a.provider, detail::layer_norm_forward_args(a));
    },
    [](const PassArgs& a) {
      return layer_norm_backward_cpu(
          a.provider, detail::layer_norm_backward_args(a),
          std::span<std::byte>(static_cast<std::byte*>(a.workspace), a.workspace_bytes));
    }};

std::vector<double> input(const std::vector<HostTensor>& inputs, const std::string& name) {
  const HostTensor* tensor = find_tensor(inputs, name);
  return tensor == nullptr ? std::vector<double>{} : tensor->values();
}

ExpectedOutputs expected(Pass pass, const CaseSpec& spec, const std::vector<HostTensor>& inputs) {
  ExpectedOutputs out;
  const auto x = input(inputs, "x");
  const auto w = input(inputs, "weight");
  if (pass != Pass::Backward) {
    auto forward =
        oracle::layer_norm_forward(x, w, input(inputs, "bias"), spec.rows, spec.cols, spec.eps);
    out["y"] = std::move(forward.y);
    out["mean"] = std::move(forward.mean);
    out["rstd"] = std::move(forward.rstd);
  }
  if (pass != Pass::Forward) {
    auto backward =
        oracle::layer_norm_backward(x, w, input(inputs, "dy"), spec.rows, spec.cols, spec.eps);
    out["dx"] = std::move(backward.dx);
    out["dweight"] = std::move(backward.dweight);
    out["dbias"] = std::move(backward.dbias);
  }
  return out;
}

// dx is a cancelling sum: judged against the largest of its terms.
std::map<std::string, double> error_scales(Pass pass, const CaseSpec& spec,
                                           const std::vector<HostTensor>& inputs) {
  std::map<std::string, double> scales;
  if (pass == Pass::Forward) return scales;
  const auto backward =
      oracle::layer_norm_backward(input(inputs, "x"), input(inputs, "weight"), input(inputs, "dy"),
                                  spec.rows, spec.cols, spec.eps);
  double largest = 0.0;
  for (double term : backward.dx_terms) largest = std::max(largest, term);
  scales["dx"] = largest;
  return scales;
}

// Hidden 1 to 65536 around the block sizes, single rows, a non-default eps.
std::vector<CaseSpec> sweep(DType dtype) {
  std::vector<CaseSpec> specs;
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1},     {1, 1000}, {3, 4097},
                                                          {17, 1000}, {130, 64}, {64, 256},
                                                          {2, 65536}, {5, 8192}, {4, 3}};
  for (const auto& [rows, cols] : shapes) {
    CaseSpec spec;
    spec.rows = rows;
    spec.cols = cols;
    spec.dtype = dtype;
    specs.push_back(spec);
  }
  CaseSpec eps = specs[3];
  eps.eps = 1e-2;  // a non-default eps changes rstd visibly
  specs.push_back(eps);
  return specs;
}

}  // namespace

namespace detail {

LayerNormForward layer_norm_forward_args(const PassArgs& a) {
  return LayerNormForward{a.tensor("x"),    a.tensor("weight"), a.tensor("bias"), a.tensor("y"),
                          a.tensor("mean"), a.tensor("rstd"),   a.spec->eps};
}

LayerNormBackward layer_norm_backward_args(const PassArgs& a) {
  return LayerNormBackward{a.tensor("dy"),      a.tensor("x"),    a.tensor("weight"),
                           a.tensor("mean"),    a.tensor("rstd"), a.tensor("dx"),
                           a.tensor("dweight"), a.tensor("dbias")};
}

}  // namespace detail

const KernelDescriptor& layer_norm_descriptor() {
  static const KernelDescriptor descriptor{
      .name = "layer_norm",
      .title = "LayerNorm",
      .example_workload = "hidden2048-rows2048-fp32",
      .passes = {Pass::Forward, Pass::Backward, Pass::Full},
      .bench_shape = {"rows", "hidden", 4096, 16384, 2048, 2048},
      .parse_workload = parse_workload,
      .workload = workload_of,
      .validate = validate_spec,
      .forward_bytes = forward_bytes,
      .backward_bytes = backward_bytes,
      .plan = plan,
      .fill_input = fill_input,
      .cpu = kCpu,
      .has_cuda = true,
#ifdef KERNELWATCH_KERNELS_CUDA
      .cuda = &detail::layer_norm_cuda_ops(),
#else
      .cuda = nullptr,
#endif
      .oracle = {.expected = expected, .error_scales = error_scales, .sweep = sweep},
  };
  return descriptor;
}

}  // namespace kernelwatch::kernels
