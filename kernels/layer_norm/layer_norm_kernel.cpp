// LayerNorm's entry in the catalogue: its workload form, bandwidth floor, tensors, seeded inputs,
// CPU and CUDA entry points and oracle.
#include "kernels/detail/fill.hpp"
#include "kernels/detail/kernel_parts.hpp"
#include "kernels/layer_norm/layer_norm.hpp"
#include "kernels/layer_norm/oracle.hpp"

namespace kernelwatch::kernels {
namespace {

core::Result<CaseSpec> parse_workload(const core::Workload& workload) {
  if (workload.kernel != "layer_norm") {  // core's hidden<N>-rows<M>-<dtype> form
    return detail::wrong_workload(workload,
                                  "a layer_norm workload like \"hidden2048-rows2048-fp32\"");
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
  const std::int64_t s = detail::element_bytes(spec.dtype);
  return s * (2 * spec.rows * spec.cols + 2 * spec.cols) + 8 * spec.rows;
}

// Read dy, x, weight, mean, rstd; write dx, dweight, dbias.
std::int64_t backward_bytes(const CaseSpec& spec) {
  const std::int64_t s = detail::element_bytes(spec.dtype);
  return s * (3 * spec.rows * spec.cols + 3 * spec.cols) + 8 * spec.rows;
}

std::vector<TensorPlan> plan(Pass pass, const CaseSpec& spec) {
  return detail::row_norm_plan(pass, spec, {"bias"}, {"mean", "rstd"});
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
      return layer_norm_backward_cpu(a.provider, detail::layer_norm_backward_args(a),
                                     detail::cpu_workspace(a));
    }};

using detail::input_values;

ExpectedOutputs expected(Pass pass, const CaseSpec& spec, const std::vector<HostTensor>& inputs) {
  ExpectedOutputs out;
  const auto x = input_values(inputs, "x");
  const auto w = input_values(inputs, "weight");
  if (pass != Pass::Backward) {
    auto forward = oracle::layer_norm_forward(x, w, input_values(inputs, "bias"), spec.rows,
                                              spec.cols, spec.eps);
    out["y"] = std::move(forward.y);
    out["mean"] = std::move(forward.mean);
    out["rstd"] = std::move(forward.rstd);
  }
  if (pass != Pass::Forward) {
    auto backward = oracle::layer_norm_backward(x, w, input_values(inputs, "dy"), spec.rows,
                                                spec.cols, spec.eps);
    out["dx"] = std::move(backward.dx);
    out["dweight"] = std::move(backward.dweight);
    out["dbias"] = std::move(backward.dbias);
  }
  return out;
}

// dx is a cancelling sum: judged against the largest of its terms.
std::map<std::string, double> error_scales(Pass pass, const CaseSpec& spec,
                                           const std::vector<HostTensor>& inputs) {
  if (pass == Pass::Forward) return {};
  const auto backward =
      oracle::layer_norm_backward(input_values(inputs, "x"), input_values(inputs, "weight"),
                                  input_values(inputs, "dy"), spec.rows, spec.cols, spec.eps);
  return {{"dx", detail::largest(backward.dx_terms)}};
}

// Hidden 1 to 65536 around the block sizes, single rows, a non-default eps.
std::vector<CaseSpec> sweep(DType dtype) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1},     {1, 1000}, {3, 4097},
                                                          {17, 1000}, {130, 64}, {64, 256},
                                                          {2, 65536}, {5, 8192}, {4, 3}};
  std::vector<CaseSpec> specs = detail::sweep_shapes(dtype, shapes);
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
      .cuda = KW_CUDA_OPS(detail::layer_norm_cuda_ops),
      .oracle = {.expected = expected, .error_scales = error_scales, .sweep = sweep},
  };
  return descriptor;
}

}  // namespace kernelwatch::kernels
