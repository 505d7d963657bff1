// The correctness protocol both the CPU and the GPU provider tests run on a registry case:
// fresh seeded inputs, NaN-poisoned outputs, one run compared with the float64 oracle, and (for
// the fused provider) a second run that must give the same bytes. GoogleTest and kernels/ only.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/harness/check.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels {
// GoogleTest prints a CaseId parameter by name.
inline void PrintTo(const CaseId& id, std::ostream* out) {
  *out << id.name();
}
}  // namespace kernelwatch::kernels

namespace kernelwatch::kernels::testing {

// The check primitives live in the library (the harness's gate uses them too).
using kernels::error_scale;
using kernels::error_scales;
using kernels::expected_outputs;
using kernels::relative_error;
using kernels::tolerance;

// Runs the protocol; the failure message names the case, the shape and the tensor.
[[nodiscard]] ::testing::AssertionResult matches_oracle(const CaseId& id, const CaseSpec& spec,
                                                        std::uint64_t seed);

// The shapes and options the provider tests sweep: the kernel's own (its oracle's sweep).
[[nodiscard]] std::vector<CaseSpec> sweep(KernelRef kernel, DType dtype);

// "tvd/forward/kernelwatch-fused/cpu" -> "tvd_forward_kernelwatch_fused_cpu" (a test name).
[[nodiscard]] std::string test_name(const CaseId& id);

}  // namespace kernelwatch::kernels::testing
