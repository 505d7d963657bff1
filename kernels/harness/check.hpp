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

// max_i |got_i - want_i| / max_i |want_i| (the absolute error when want is all zero);
// +infinity when got holds a NaN or an infinity or the sizes differ.
[[nodiscard]] double relative_error(const HostTensor& got, const std::vector<double>& want);

// The oracle's value of every output tensor of `id`, computed from the case's host inputs.
[[nodiscard]] std::map<std::string, std::vector<double>> expected_outputs(
    const CaseId& id, const CaseSpec& spec, const std::vector<HostTensor>& inputs);

// Prepares `c` from `seed`, poisons its outputs, runs it once and compares every output with
// the oracle. Returns "" when all match, else what is wrong ("dx: relative error 0.31 over the
// fp32 tolerance 1e-05"). Errors are for a case that cannot run at all.
[[nodiscard]] core::Result<std::string> check_case(Case& c, std::uint64_t seed);

}  // namespace kernelwatch::kernels
