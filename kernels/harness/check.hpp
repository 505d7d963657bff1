// Checking a case's outputs against the float64 oracle: the tolerance per dtype, the relative
// error measure, the oracle's expected outputs, and the whole protocol on one case (seeded
// inputs, NaN-poisoned outputs, one run). Used by the harness's gate and by the tests.
// Plain C++ over the registry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels {

// fp32: 1e-5, bf16: 1e-2.
[[nodiscard]] double tolerance(DType dtype);

// max_i |got_i - want_i| / max(max_i |want_i|, scale) (the absolute error when both are zero);
// +infinity when got holds a NaN or an infinity or the sizes differ. `scale` is the size of the
// terms an output is summed from, where that exceeds the output (error_scales()).
[[nodiscard]] double relative_error(const HostTensor& got, const std::vector<double>& want,
                                    double scale = 0.0);

// The oracle's value of every output tensor of `id`, computed from the case's host inputs.
[[nodiscard]] std::map<std::string, std::vector<double>> expected_outputs(
    const CaseId& id, const CaseSpec& spec, const std::vector<HostTensor>& inputs);

// For outputs computed by cancelling sums (LayerNorm dx), the largest term they are summed from:
// fp32 rounding scales with the terms, so the error is judged against them. Other outputs are
// judged against their own size and are absent here.
[[nodiscard]] std::map<std::string, double> error_scales(const CaseId& id, const CaseSpec& spec,
                                                         const std::vector<HostTensor>& inputs);
[[nodiscard]] double error_scale(const std::map<std::string, double>& scales,
                                 const std::string& name);

// Prepares `c` from `seed`, poisons its outputs, runs it once and compares every output with
// the oracle. Returns "" when all match, else what is wrong ("dx: relative error 0.31 over the
// fp32 tolerance 1e-05"). Errors are for a case that cannot run at all.
[[nodiscard]] core::Result<std::string> check_case(Case& c, std::uint64_t seed);

}  // namespace kernelwatch::kernels
