#include "tests/kernels/case_check.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "kernels/catalogue.hpp"

namespace kernelwatch::kernels::testing {

namespace {

std::string describe(const CaseId& id, const CaseSpec& spec) {
  std::ostringstream out;
  out << id.name() << " " << spec.rows << " x " << spec.cols << " " << core::to_string(spec.dtype);
  if (id.kernel == KernelRef("tvd")) {
    out << " reduction=" << to_string(spec.reduction) << " ignored="
        << (spec.ignored == IgnoredRows::None
                ? "none"
                : (spec.ignored == IgnoredRows::Some ? "some" : "all"));
  }
  return out.str();
}

}  // namespace

::testing::AssertionResult matches_oracle(const CaseId& id, const CaseSpec& spec,
                                          std::uint64_t seed) {
  const std::string what = describe(id, spec);
  auto created = create_case(id, spec);
  if (!created) return ::testing::AssertionFailure() << what << ": " << created.error().message;
  Case& instance = **created;
  if (auto ok = instance.prepare(seed); !ok) {
    return ::testing::AssertionFailure() << what << ": prepare: " << ok.error().message;
  }
  auto inputs = instance.inputs();
  if (!inputs) return ::testing::AssertionFailure() << what << ": " << inputs.error().message;
  const auto expected = expected_outputs(id, spec, *inputs);
  const auto scales = error_scales(id, spec, *inputs);

  std::vector<HostTensor> first;
  for (int attempt = 0; attempt < (id.provider == Provider::Fused ? 2 : 1); ++attempt) {
    if (auto ok = instance.poison_outputs(); !ok) {
      return ::testing::AssertionFailure() << what << ": poison: " << ok.error().message;
    }
    if (auto ok = instance.run(); !ok) {
      return ::testing::AssertionFailure() << what << ": run: " << ok.error().message;
    }
    auto outputs = instance.outputs();
    if (!outputs) return ::testing::AssertionFailure() << what << ": " << outputs.error().message;
    if (outputs->size() != expected.size()) {
      return ::testing::AssertionFailure()
             << what << ": " << outputs->size() << " outputs, the oracle has " << expected.size();
    }
    if (attempt == 0) {
      for (const HostTensor& got : *outputs) {
        const auto want = expected.find(got.name);
        if (want == expected.end()) {
          return ::testing::AssertionFailure() << what << ": unexpected output " << got.name;
        }
        const double error = relative_error(got, want->second, error_scale(scales, got.name));
        if (!(error <= tolerance(spec.dtype))) {
          return ::testing::AssertionFailure()
                 << what << ": output " << got.name << " relative error " << error << " > "
                 << tolerance(spec.dtype);
        }
      }
      first = std::move(*outputs);
      continue;
    }
    for (std::size_t t = 0; t < first.size(); ++t) {
      if ((*outputs)[t].bytes != first[t].bytes) {
        return ::testing::AssertionFailure()
               << what << ": output " << first[t].name << " differs between two runs";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<CaseSpec> sweep(KernelRef kernel, DType dtype) {
  return kernel->oracle.sweep(dtype);
}

std::string test_name(const CaseId& id) {
  std::string name = id.name();
  for (char& c : name) {
    if (c == '/' || c == '-') c = '_';
  }
  return name;
}

}  // namespace kernelwatch::kernels::testing
