// RMSNorm's entry in the catalogue: its workload form (the label Liger's
// importer gives Liger's rms_norm benchmark, so a rerun lands next to that
// history), bandwidth floor, tensors, seeded inputs, CPU entry points and
// oracle. No CUDA implementation: its CUDA cases do not exist.
#include <cstdlib>
#include <regex>

#include <nlohmann/json.hpp>

#include "kernels/detail/fill.hpp"
#include "kernels/detail/kernel_parts.hpp"
#include "kernels/rms_norm/oracle.hpp"
#include "kernels/rms_norm/rms_norm.hpp"

namespace kernelwatch::kernels {
namespace {

// "h4096-bf16-eps1e-06-m2048": Liger's benchmark_rms_norm.py sweeps H with
// {"M", "dtype", "eps"}, which its importer labels
// "<x_name><x_value>-<dtype>-eps<eps>-m<M>" (eps as JSON writes it).
core::Result<CaseSpec> parse_workload(const core::Workload& workload) {
  static const std::regex kForm("h([0-9]+)-(fp32|bf16|fp16)-eps([0-9.]+(e-?[0-9]+)?)-m([0-9]+)");
  std::smatch match;
  const std::string label = workload.label();
  if (!workload.opaque() || !std::regex_match(label, match, kForm)) {
    return detail::wrong_workload(workload,
                                  "an rms_norm workload like \"h4096-bf16-eps1e-06-m2048\"");
  }
  CaseSpec spec;
  spec.cols = std::strtoll(match[1].str().c_str(), nullptr, 10);
  spec.dtype = KW_TRY(core::parse_dtype(match[2].str()));
  spec.eps = std::strtod(match[3].str().c_str(), nullptr);
  spec.rows = std::strtoll(match[5].str().c_str(), nullptr, 10);
  return spec;
}

core::Workload workload_of(const CaseSpec& spec) {
  // Appended piece by piece: GCC 12 at -O3 warns of an overlapping memcpy in `"h" + ...`.
  std::string label("h");
  label += std::to_string(spec.cols);
  label += '-';
  label += core::to_string(spec.dtype);
  label += "-eps";
  label += nlohmann::json(spec.eps).dump();
  label += "-m";
  label += std::to_string(spec.rows);
  return core::Workload::from_label(label).value();
}

core::Status validate_spec(const CaseSpec& spec) {
  return validate_rms_norm_shape(spec.rows, spec.cols, spec.dtype, spec.eps);
}

// Read x, weight; write y, rstd.
std::int64_t forward_bytes(const CaseSpec& spec) {
  const std::int64_t s = detail::element_bytes(spec.dtype);
  return s * (2 * spec.rows * spec.cols + spec.cols) + 4 * spec.rows;
}

// Read dy, x, weight, rstd; write dx, dweight.
std::int64_t backward_bytes(const CaseSpec& spec) {
  const std::int64_t s = detail::element_bytes(spec.dtype);
  return s * (3 * spec.rows * spec.cols + 2 * spec.cols) + 4 * spec.rows;
}

std::vector<TensorPlan> plan(Pass pass, const CaseSpec& spec) {
  return detail::row_norm_plan(pass, spec, {}, {"rstd"});
}

enum Stream : std::uint64_t { kX = 101, kWeight, kDy };

void fill_input(const CaseSpec&, const TensorPlan& tensor, std::uint64_t seed, void* host) {
  const std::string& name = tensor.name;
  if (name == "x") {
    detail::fill_uniform(tensor, seed, kX, -2.0, 4.0, host);
  } else if (name == "weight") {
    detail::fill_uniform(tensor, seed, kWeight, 0.5, 1.0, host);
  } else {
    KW_ASSERT(name == "dy", "rms_norm fill_input: not an input tensor");
    detail::fill_uniform(tensor, seed, kDy, -1.0, 2.0, host);
  }
}

RmsNormForward forward_args(const PassArgs& a) {
  return RmsNormForward{a.tensor("x"), a.tensor("weight"), a.tensor("y"), a.tensor("rstd"),
                        a.spec->eps};
}

RmsNormBackward backward_args(const PassArgs& a) {
  return RmsNormBackward{a.tensor("dy"),   a.tensor("x"),  a.tensor("weight"),
                         a.tensor("rstd"), a.tensor("dx"), a.tensor("dweight")};
}

const BackendOps kCpu{
    [](Provider provider, const CaseSpec& s, int) {
      return rms_norm_backward_cpu_workspace_bytes(provider, s.rows, s.cols);
    },
    [](const PassArgs& a) { return rms_norm_forward_cpu(a.provider, forward_args(a)); },
    [](const PassArgs& a) {
      return rms_norm_backward_cpu(a.provider, backward_args(a), detail::cpu_workspace(a));
    }};

using detail::input_values;

ExpectedOutputs expected(Pass pass, const CaseSpec& spec, const std::vector<HostTensor>& inputs) {
  ExpectedOutputs out;
  const auto x = input_values(inputs, "x");
  const auto w = input_values(inputs, "weight");
  if (pass != Pass::Backward) {
    auto forward = oracle::rms_norm_forward(x, w, spec.rows, spec.cols, spec.eps);
    out["y"] = std::move(forward.y);
    out["rstd"] = std::move(forward.rstd);
  }
  if (pass != Pass::Forward) {
    auto backward =
        oracle::rms_norm_backward(x, w, input_values(inputs, "dy"), spec.rows, spec.cols, spec.eps);
    out["dx"] = std::move(backward.dx);
    out["dweight"] = std::move(backward.dweight);
  }
  return out;
}

// dx is a cancelling sum: judged against the largest of its terms.
std::map<std::string, double> error_scales(Pass pass, const CaseSpec& spec,
                                           const std::vector<HostTensor>& inputs) {
  if (pass == Pass::Forward) return {};
  const auto backward =
      oracle::rms_norm_backward(input_values(inputs, "x"), input_values(inputs, "weight"),
                                input_values(inputs, "dy"), spec.rows, spec.cols, spec.eps);
  return {{"dx", detail::largest(backward.dx_terms)}};
}

// Hidden 1 to 65536 around the lane and chunk sizes, single rows, more rows
// than backward blocks, a non-default eps.
std::vector<CaseSpec> sweep(DType dtype) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1},    {1, 1000},  {3, 4097},
                                                          {130, 64}, {2, 65536}, {4, 3}};
  std::vector<CaseSpec> specs = detail::sweep_shapes(dtype, shapes);
  CaseSpec eps = specs[2];
  eps.eps = 1e-2;  // a non-default eps changes rstd visibly
  specs.push_back(eps);
  return specs;
}

}  // namespace

const KernelDescriptor& rms_norm_descriptor() {
  static const KernelDescriptor descriptor{
      .name = "rms_norm",
      .title = "RMSNorm",
      .example_workload = "h4096-bf16-eps1e-06-m2048",
      .passes = {Pass::Forward, Pass::Backward, Pass::Full},
      .bench_shape = {"rows", "hidden", 2048, 4096, 2048, 2048},
      .parse_workload = parse_workload,
      .workload = workload_of,
      .validate = validate_spec,
      .forward_bytes = forward_bytes,
      .backward_bytes = backward_bytes,
      .plan = plan,
      .fill_input = fill_input,
      .cpu = kCpu,
      .has_cuda = false,
      .cuda = nullptr,
      .oracle = {.expected = expected, .error_scales = error_scales, .sweep = sweep},
  };
  return descriptor;
}

}  // namespace kernelwatch::kernels
