#include "kernels/harness/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels/harness/oracle.hpp"

namespace kernelwatch::kernels {

double tolerance(DType dtype) {
  return dtype == DType::Bf16 ? 1e-2 : 1e-5;
}

double relative_error(const HostTensor& got, const std::vector<double>& want, double scale) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  if (static_cast<std::size_t>(got.elements()) != want.size()) return kInfinity;
  double max_error = 0.0;
  double max_want = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double value = got.value(static_cast<std::int64_t>(i));
    if (!std::isfinite(value)) return kInfinity;
    max_error = std::max(max_error, std::fabs(value - want[i]));
    max_want = std::max(max_want, std::fabs(want[i]));
  }
  const double denominator = std::max(max_want, scale);
  return denominator > 0.0 ? max_error / denominator : max_error;
}

namespace {

std::vector<double> input(const std::vector<HostTensor>& inputs, const std::string& name) {
  const HostTensor* tensor = find_tensor(inputs, name);
  return tensor == nullptr ? std::vector<double>{} : tensor->values();
}

}  // namespace

std::map<std::string, std::vector<double>> expected_outputs(const CaseId& id, const CaseSpec& spec,
                                                            const std::vector<HostTensor>& inputs) {
  std::map<std::string, std::vector<double>> expected;
  if (id.kernel == Kernel::LayerNorm) {
    const auto x = input(inputs, "x");
    const auto w = input(inputs, "weight");
    if (id.pass != Pass::Backward) {
      auto forward =
          oracle::layer_norm_forward(x, w, input(inputs, "bias"), spec.rows, spec.cols, spec.eps);
      expected["y"] = std::move(forward.y);
      expected["mean"] = std::move(forward.mean);
      expected["rstd"] = std::move(forward.rstd);
    }
    if (id.pass != Pass::Forward) {
      auto backward =
          oracle::layer_norm_backward(x, w, input(inputs, "dy"), spec.rows, spec.cols, spec.eps);
      expected["dx"] = std::move(backward.dx);
      expected["dweight"] = std::move(backward.dweight);
      expected["dbias"] = std::move(backward.dbias);
    }
    return expected;
  }
  std::vector<std::int64_t> labels;
  for (double label : input(inputs, "labels")) labels.push_back(static_cast<std::int64_t>(label));
  auto forward = oracle::tvd_forward(input(inputs, "p"), input(inputs, "q"), labels, spec.rows,
                                     spec.cols, spec.reduction, spec.ignore_index);
  if (id.pass != Pass::Forward) {
    expected["dp"] = oracle::tvd_backward(forward.grad, input(inputs, "grad_output"));
  }
  if (id.pass != Pass::Backward) {
    expected["loss"] = std::move(forward.loss);
    expected["grad"] = std::move(forward.grad);
  }
  return expected;
}

std::map<std::string, double> error_scales(const CaseId& id, const CaseSpec& spec,
                                           const std::vector<HostTensor>& inputs) {
  std::map<std::string, double> scales;
  if (id.kernel != Kernel::LayerNorm || id.pass == Pass::Forward) return scales;
  const auto backward =
      oracle::layer_norm_backward(input(inputs, "x"), input(inputs, "weight"), input(inputs, "dy"),
                                  spec.rows, spec.cols, spec.eps);
  double largest = 0.0;
  for (double term : backward.dx_terms) largest = std::max(largest, term);
  scales["dx"] = largest;
  return scales;
}

double error_scale(const std::map<std::string, double>& scales, const std::string& name) {
  const auto it = scales.find(name);
  return it == scales.end() ? 0.0 : it->second;
}

core::Result<std::string> check_case(Case& c, std::uint64_t seed) {
  KW_TRY(c.prepare(seed));
  const auto inputs = KW_TRY(c.inputs());
  const auto expected = expected_outputs(c.id(), c.spec(), inputs);
  const auto scales = error_scales(c.id(), c.spec(), inputs);
  KW_TRY(c.poison_outputs());
  KW_TRY(c.run());
  const auto outputs = KW_TRY(c.outputs());
  for (const HostTensor& got : outputs) {
    const auto want = expected.find(got.name);
    if (want == expected.end()) continue;
    const double error = relative_error(got, want->second, error_scale(scales, got.name));
    const double bound = tolerance(c.spec().dtype);
    if (!(error <= bound)) {
      char buffer[160];
      std::snprintf(buffer, sizeof buffer, "%s: relative error %.3g over the %s tolerance %.0e",
                    got.name.c_str(), error, std::string(core::to_string(c.spec().dtype)).c_str(),
                    bound);
      return std::string(buffer);
    }
  }
  for (const auto& [name, values] : expected) {
    if (find_tensor(outputs, name) == nullptr) return name + ": not produced";
  }
  return std::string();
}

}  // namespace kernelwatch::kernels
