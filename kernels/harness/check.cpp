#include "kernels/harness/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels/catalogue.hpp"

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

std::map<std::string, std::vector<double>> expected_outputs(const CaseId& id, const CaseSpec& spec,
                                                            const std::vector<HostTensor>& inputs) {
  return id.kernel->oracle.expected(id.pass, spec, inputs);
}

std::map<std::string, double> error_scales(const CaseId& id, const CaseSpec& spec,
                                           const std::vector<HostTensor>& inputs) {
  const auto scales = id.kernel->oracle.error_scales;
  return scales == nullptr ? std::map<std::string, double>{} : scales(id.pass, spec, inputs);
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
