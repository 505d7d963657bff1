// The case catalogue: names, validation, bandwidth floors, and the per-backend factories.
#include "kernels/registry.hpp"

#include <cstring>

#include "kernels/detail/backends.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/tvd.hpp"

namespace kernelwatch::kernels {

using core::ErrorCode;

std::string CaseId::benchmark() const {
  return std::string(to_string(kernel)) + "/" + std::string(to_string(pass));
}

std::string CaseId::name() const {
  return benchmark() + "/" + std::string(to_string(provider)) + "/" +
         std::string(to_string(backend));
}

std::vector<CaseId> all_cases() {
  std::vector<CaseId> cases;
  for (Kernel kernel : core::kKernels) {
    for (Pass pass : core::kPasses) {
      for (Provider provider : core::kProviders) {
        for (Backend backend : {Backend::Cpu, Backend::Cuda}) {
          cases.push_back(CaseId{kernel, pass, provider, backend});
        }
      }
    }
  }
  return cases;
}

std::vector<CaseId> cases_for(Backend backend) {
  std::vector<CaseId> cases;
  for (const CaseId& id : all_cases()) {
    if (id.backend == backend) cases.push_back(id);
  }
  return cases;
}

core::Result<CaseId> parse_case_id(std::string_view name) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 4) {
    return core::fail(ErrorCode::InvalidArgument,
                      "case \"" + std::string(name) +
                          "\" must look like kernel/pass/provider/backend, e.g. "
                          "\"tvd/forward/kernelwatch-fused/cpu\"");
  }
  const auto context = "case \"" + std::string(name) + "\"";
  return CaseId{KW_TRY_WITH(core::parse_kernel(parts[0]), context),
                KW_TRY_WITH(core::parse_pass(parts[1]), context),
                KW_TRY_WITH(core::parse_provider(parts[2]), context),
                KW_TRY_WITH(parse_backend(parts[3]), context)};
}

core::Result<CaseSpec> CaseSpec::from_workload(const core::Workload& workload) {
  CaseSpec spec;
  spec.dtype = workload.dtype;
  if (workload.kernel) {
    switch (*workload.kernel) {
      case Kernel::LayerNorm:
        spec.rows = workload.rows;
        spec.cols = workload.hidden;
        spec.eps = workload.eps;
        return spec;
      case Kernel::Tvd:
        spec.rows = workload.tokens;
        spec.cols = workload.vocab;
        return spec;
    }
  }
  return core::fail(ErrorCode::InvalidArgument, "workload \"" + workload.opaque_label +
                                                    "\" is not a kernelwatch kernel's workload");
}

core::Status validate(Kernel kernel, const CaseSpec& spec) {
  if (kernel == Kernel::LayerNorm) {
    return validate_layer_norm_shape(spec.rows, spec.cols, spec.dtype, spec.eps);
  }
  return validate_tvd_shape(spec.rows, spec.cols, spec.dtype);
}

std::int64_t bytes_moved(const CaseId& id, const CaseSpec& spec) {
  const std::int64_t s = spec.dtype == DType::Bf16 ? 2 : 4;
  const std::int64_t m = spec.rows;
  const std::int64_t n = spec.cols;
  std::int64_t forward = 0;
  std::int64_t backward = 0;
  if (id.kernel == Kernel::LayerNorm) {
    // read x, weight, bias; write y, mean, rstd
    forward = s * (2 * m * n + 2 * n) + 8 * m;
    // read dy, x, weight, mean, rstd; write dx, dweight, dbias
    backward = s * (3 * m * n + 3 * n) + 8 * m;
  } else {
    const bool none = spec.reduction == Reduction::None;
    const std::int64_t labels = spec.ignored == IgnoredRows::None ? 0 : 8 * m;
    const std::int64_t fp32_loss = none ? 4 * m * n : 4;
    // read p, q, labels; write grad and loss
    forward = s * 3 * m * n + labels + fp32_loss;
    // read grad, grad_output; write dp
    backward = s * 2 * m * n + fp32_loss;
  }
  switch (id.pass) {
    case Pass::Forward:
      return forward;
    case Pass::Backward:
      return backward;
    case Pass::Full:
      return forward + backward;
  }
  return 0;
}

double HostTensor::value(std::int64_t index) const {
  const std::byte* at = bytes.data() + static_cast<std::size_t>(index) * element_size(type);
  switch (type) {
    case ElementType::Fp32: {
      float v = 0.0f;
      std::memcpy(&v, at, sizeof v);
      return v;
    }
    case ElementType::Bf16: {
      Bf16 v;
      std::memcpy(&v.bits, at, sizeof v.bits);
      return to_float(v);
    }
    case ElementType::Int64: {
      std::int64_t v = 0;
      std::memcpy(&v, at, sizeof v);
      return static_cast<double>(v);
    }
  }
  return 0.0;
}

std::vector<double> HostTensor::values() const {
  std::vector<double> result(static_cast<std::size_t>(elements()));
  for (std::int64_t i = 0; i < elements(); ++i) result[static_cast<std::size_t>(i)] = value(i);
  return result;
}

const HostTensor* find_tensor(const std::vector<HostTensor>& tensors, std::string_view name) {
  for (const auto& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

core::Status Case::run() {
  KW_TRY(launch());
  return synchronize();
}

core::Status backend_available(Backend backend) {
  if (backend == Backend::Cpu) return {};
  return detail::cuda_available();
}

core::Result<std::unique_ptr<Case>> create_case(const CaseId& id, const CaseSpec& spec) {
  KW_TRY_WITH(validate(id.kernel, spec), id.name());
  if (id.backend == Backend::Cpu) return detail::create_cpu_case(id, spec);
  KW_TRY_WITH(detail::cuda_available(), id.name());
  return detail::create_cuda_case(id, spec);
}

}  // namespace kernelwatch::kernels
