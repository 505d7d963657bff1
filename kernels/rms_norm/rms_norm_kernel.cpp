// RMSNorm's entry in the catalogue: its workload form (the label Liger's
// importer gives Liger's rms_norm benchmark, so a rerun lands next to that
// history), bandwidth floor, tensors, seeded inputs, CPU entry points and
// oracle. No CUDA implementation: its CUDA cases do not exist.
#include <algorithm>
#include <cstdlib>
#include <regex>

#include <nlohmann/json.hpp>

#include "kernels/detail/fill.hpp"
#include "kernels/rms_norm/oracle.hpp"
#include "kernels/rms_norm/rms_norm.hpp"

namespace kernelwatch::kernels {
namespace {

using core::ErrorCode;

// "h4096-bf16-eps1e-06-m2048": Liger's benchmark_rms_norm.py sweeps H with
// {"M", "dtype", "eps"}, which its importer labels
// "<x_name><x_value>-<dtype>-eps<eps>-m<M>" (eps as JSON writes it).
core::Result<CaseSpec> parse_workload(const core::Workload& workload) {
  static const std::regex kForm("h([0-9]+)-(fp32|bf16|fp16)-eps([0-9.]+(e-?[0-9]+)?)-m([0-9]+)");
  std::smatch match;
  const std::string label = workload.label();
  if (workload.kernel || !std::regex_match(label, match, kForm)) {
    std::string message = label;
    message.insert(0, 1, '"');
    message.append("\" is not an rms_norm workload like \"h4096-bf16-eps1e-06-m2048\"");
    return core::fail(ErrorCode::InvalidArgument, message);
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
  const std::int64_t s = spec.dtype == DType::Bf16 ? 2 : 4;
  return s * (2 * spec.rows * spec.cols + spec.cols) + 4 * spec.rows;
}

// Read dy, x, weight, rstd; write dx, dweight.
std::int64_t backward_bytes(const CaseSpec& spec) {
  const std::int64_t s = spec.dtype == DType::Bf16 ? 2 : 4;
  return s * (3 * spec.rows * spec.cols + 2 * spec.cols) + 4 * spec.rows;
}

std::vector<TensorPlan> plan(Pass pass, const CaseSpec& spec) {
  const ElementType t = spec.dtype == DType::Bf16 ? ElementType::Bf16 : ElementType::Fp32;
  const std::int64_t m = spec.rows;
  const std::int64_t n = spec.cols;
  const bool forward = pass != Pass::Backward;
  const bool backward = pass != Pass::Forward;
  // What the forward writes: outputs when timed, saved state (or scratch) for a
  // backward pass.
  const Role saved = forward ? Role::Output : Role::State;
  const Role unused = forward ? Role::Output : Role::Scratch;
  std::vector<TensorPlan> tensors;
  tensors.push_back({"x", t, m, n, Role::Input});
  tensors.push_back({"weight", t, 1, n, Role::Input});
  if (backward) tensors.push_back({"dy", t, m, n, Role::Input});
  tensors.push_back({"y", t, m, n, unused});
  tensors.push_back({"rstd", ElementType::Fp32, m, 1, saved});
  if (backward) {
    tensors.push_back({"dx", t, m, n, Role::Output});
    tensors.push_back({"dweight", t, 1, n, Role::Output});
  }
  return tensors;
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
      return rms_norm_backward_cpu(
          a.provider, backward_args(a),
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
    auto forward = oracle::rms_norm_forward(x, w, spec.rows, spec.cols, spec.eps);
    out["y"] = std::move(forward.y);
    out["rstd"] = std::move(forward.rstd);
  }
  if (pass != Pass::Forward) {
    auto backward =
        oracle::rms_norm_backward(x, w, input(inputs, "dy"), spec.rows, spec.cols, spec.eps);
    out["dx"] = std::move(backward.dx);
    out["dweight"] = std::move(backward.dweight);
  }
  return out;
}

// dx is a cancelling sum: judged against the largest of its terms.
std::map<std::string, double> error_scales(Pass pass, const CaseSpec& spec,
                                           const std::vector<HostTensor>& inputs) {
  std::map<std::string, double> scales;
  if (pass == Pass::Forward) return scales;
  const auto backward =
      oracle::rms_norm_backward(input(inputs, "x"), input(inputs, "weight"), input(inputs, "dy"),
                                spec.rows, spec.cols, spec.eps);
  double largest = 0.0;
  for (double term : backward.dx_terms) largest = std::max(largest, term);
  scales["dx"] = largest;
  return scales;
}

// Hidden 1 to 65536 around the lane and chunk sizes, single rows, more rows
// than backward blocks, a non-default eps.
std::vector<CaseSpec> sweep(DType dtype) {
  std::vector<CaseSpec> specs;
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1},    {1, 1000},  {3, 4097},
                                                          {130, 64}, {2, 65536}, {4, 3}};
  for (const auto& [rows, cols] : shapes) {
    CaseSpec spec;
    spec.rows = rows;
    spec.cols = cols;
    spec.dtype = dtype;
    specs.push_back(spec);
  }
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
