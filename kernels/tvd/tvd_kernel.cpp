// TVD's entry in the catalogue: its workload form, bandwidth floor, tensors, seeded inputs, CPU
// and CUDA entry points and oracle.
#include <algorithm>
#include <cmath>

#include "kernels/detail/cpu_rows.hpp"
#include "kernels/detail/fill.hpp"
#include "kernels/detail/kernel_parts.hpp"
#include "kernels/tvd/oracle.hpp"
#include "kernels/tvd/tvd.hpp"

namespace kernelwatch::kernels {
namespace {

core::Result<CaseSpec> parse_workload(const core::Workload& workload) {
  if (workload.kernel != "tvd") {  // core's tokens<N>-vocab<V>-<dtype> form
    return detail::wrong_workload(workload, "a tvd workload like \"tokens1024-vocab4096-fp32\"");
  }
  CaseSpec spec;
  spec.rows = workload.tokens;
  spec.cols = workload.vocab;
  spec.dtype = workload.dtype;
  return spec;
}

core::Workload workload_of(const CaseSpec& spec) {
  return core::Workload::tvd(spec.rows, spec.cols, spec.dtype);
}

core::Status validate_spec(const CaseSpec& spec) {
  return validate_tvd_shape(spec.rows, spec.cols, spec.dtype);
}

std::int64_t fp32_loss_bytes(const CaseSpec& spec) {
  return spec.reduction == Reduction::None ? 4 * spec.rows * spec.cols : 4;
}

// Read p, q, labels; write grad and loss.
std::int64_t forward_bytes(const CaseSpec& spec) {
  const std::int64_t s = detail::element_bytes(spec.dtype);
  const std::int64_t labels = spec.ignored == IgnoredRows::None ? 0 : 8 * spec.rows;
  return s * 3 * spec.rows * spec.cols + labels + fp32_loss_bytes(spec);
}

// Read grad, grad_output; write dp.
std::int64_t backward_bytes(const CaseSpec& spec) {
  const std::int64_t s = detail::element_bytes(spec.dtype);
  return s * 2 * spec.rows * spec.cols + fp32_loss_bytes(spec);
}

std::vector<TensorPlan> plan(Pass pass, const CaseSpec& spec) {
  detail::PassPlan p(pass, spec);
  const std::int64_t m = p.rows;
  const std::int64_t n = p.cols;
  const bool none = spec.reduction == Reduction::None;
  p.input("p", m, n);
  p.input("q", m, n);
  if (spec.ignored != IgnoredRows::None) p.input("labels", ElementType::Int64, m, 1);
  if (p.backward) p.input("grad_output", ElementType::Fp32, none ? m : 1, none ? n : 1);
  p.written("loss", ElementType::Fp32, none ? m : 1, none ? n : 1);
  p.saved("grad", p.type, m, n);
  if (p.backward) p.output("dp", m, n);
  return std::move(p).tensors();
}

// The input streams (the numbers the founding kernels have always used).
enum Stream : std::uint64_t { kP = 5, kQ, kLabels, kGradOutput, kEqual };

// Probability rows: softmax of logits in [-4, 4). In q, about one element in eight equals p's
// exactly (after rounding to the dtype), so the p == q branch of the gradient is exercised.
void fill_row(std::uint64_t seed, std::int64_t row, std::int64_t vocab, bool is_q, ElementType type,
              void* dst) {
  const auto logit = [&](Stream stream, std::int64_t i) {
    return 8.0 * detail::uniform(seed, stream, static_cast<std::uint64_t>(row * vocab + i)) - 4.0;
  };
  double sum_p = 0.0;
  double sum_q = 0.0;
  for (std::int64_t i = 0; i < vocab; ++i) {
    sum_p += std::exp(logit(kP, i));
    if (is_q) sum_q += std::exp(logit(kQ, i));
  }
  for (std::int64_t i = 0; i < vocab; ++i) {
    const std::int64_t at = row * vocab + i;
    const double p = std::exp(logit(kP, i)) / sum_p;
    double value = p;
    if (is_q && detail::uniform(seed, kEqual, static_cast<std::uint64_t>(at)) >= 0.125) {
      value = std::exp(logit(kQ, i)) / sum_q;
    }
    detail::put(dst, type, at, value);
  }
}

void fill_input(const CaseSpec& spec, const TensorPlan& tensor, std::uint64_t seed, void* host) {
  const std::string& name = tensor.name;
  if (name == "p" || name == "q") {
    const bool is_q = name == "q";
    detail::for_each_row(
        tensor.rows, std::max<std::int64_t>(1, 65536 / tensor.cols),
        [&](std::int64_t r) { fill_row(seed, r, tensor.cols, is_q, tensor.type, host); });
    return;
  }
  if (name == "labels") {
    auto* labels = static_cast<std::int64_t*>(host);
    for (std::int64_t r = 0; r < tensor.rows; ++r) {
      const bool ignored =
          spec.ignored == IgnoredRows::All || (spec.ignored == IgnoredRows::Some && r % 4 == 1);
      const auto label =
          static_cast<std::int64_t>(detail::uniform(seed, kLabels, static_cast<std::uint64_t>(r)) *
                                    static_cast<double>(spec.cols));
      labels[r] = ignored ? spec.ignore_index : label;
    }
    return;
  }
  KW_ASSERT(name == "grad_output", "tvd fill_input: not an input tensor");
  detail::fill_uniform(tensor, seed, kGradOutput, 0.5, 1.0, host);
}

const BackendOps kCpu{
    [](Provider provider, const CaseSpec& s, int) {
      return std::max(tvd_forward_cpu_workspace_bytes(provider, s.rows, s.cols, s.dtype),
                      tvd_backward_cpu_workspace_bytes(provider, s.rows, s.cols));
    },
    [](const PassArgs& a) {
      return tvd_forward_cpu(a.provider, detail::tvd_forward_args(a), detail::cpu_workspace(a));
    },
    [](const PassArgs& a) {
      return tvd_backward_cpu(a.provider, detail::tvd_backward_args(a), detail::cpu_workspace(a));
    }};

using detail::input_values;

ExpectedOutputs expected(Pass pass, const CaseSpec& spec, const std::vector<HostTensor>& inputs) {
  ExpectedOutputs out;
  std::vector<std::int64_t> labels;
  for (double label : input_values(inputs, "labels"))
    labels.push_back(static_cast<std::int64_t>(label));
  auto forward = oracle::tvd_forward(input_values(inputs, "p"), input_values(inputs, "q"), labels,
                                     spec.rows, spec.cols, spec.reduction, spec.ignore_index);
  if (pass != Pass::Forward) {
    out["dp"] = oracle::tvd_backward(forward.grad, input_values(inputs, "grad_output"));
  }
  if (pass != Pass::Backward) {
    out["loss"] = std::move(forward.loss);
    out["grad"] = std::move(forward.grad);
  }
  return out;
}

// Vocab 1, 3 and 50257, single rows, every reduction, no/some/all rows ignored.
std::vector<CaseSpec> sweep(DType dtype) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1},     {5, 3},     {7, 1},
                                                          {4, 50257}, {33, 1000}, {1, 4097}};
  std::vector<CaseSpec> specs;
  for (const CaseSpec& shape : detail::sweep_shapes(dtype, shapes)) {
    for (Reduction reduction :
         {Reduction::BatchMean, Reduction::Sum, Reduction::Mean, Reduction::None}) {
      for (IgnoredRows ignored : {IgnoredRows::None, IgnoredRows::Some, IgnoredRows::All}) {
        CaseSpec spec = shape;
        spec.reduction = reduction;
        spec.ignored = ignored;
        specs.push_back(spec);
      }
    }
  }
  return specs;
}

}  // namespace

namespace detail {

TvdForward tvd_forward_args(const PassArgs& a) {
  return TvdForward{a.tensor("p"),    a.tensor("q"),     a.tensor("labels"),  a.tensor("loss"),
                    a.tensor("grad"), a.spec->reduction, a.spec->ignore_index};
}

TvdBackward tvd_backward_args(const PassArgs& a) {
  return TvdBackward{a.tensor("grad"), a.tensor("grad_output"), a.tensor("dp")};
}

}  // namespace detail

const KernelDescriptor& tvd_descriptor() {
  static const KernelDescriptor descriptor{
      .name = "tvd",
      .title = "Total variation distance loss",
      .example_workload = "tokens1024-vocab4096-fp32",
      .passes = {Pass::Forward, Pass::Backward, Pass::Full},
      .bench_shape = {"tokens", "vocab", 16384, 65536, 1024, 4096},
      .parse_workload = parse_workload,
      .workload = workload_of,
      .validate = validate_spec,
      .forward_bytes = forward_bytes,
      .backward_bytes = backward_bytes,
      .plan = plan,
      .fill_input = fill_input,
      .cpu = kCpu,
      .has_cuda = true,
      .cuda = KW_CUDA_OPS(detail::tvd_cuda_ops),
      .oracle = {.expected = expected, .error_scales = nullptr, .sweep = sweep},
  };
  return descriptor;
}

}  // namespace kernelwatch::kernels
