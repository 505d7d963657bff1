// The cases of the catalogue: names, workloads, bandwidth floors, and the per-backend factories.
#include "kernels/registry.hpp"

#include <cstring>

#include "kernels/catalogue.hpp"
#include "kernels/detail/backends.hpp"

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
  for (const KernelDescriptor* kernel : catalogue()) {
    for (Pass pass : kernel->passes) {
      for (Provider provider : core::kProviders) {
        for (Backend backend : {Backend::Cpu, Backend::Cuda}) {
          if (backend == Backend::Cuda && !kernel->has_cuda) continue;
          cases.push_back(CaseId{KernelRef(*kernel), pass, provider, backend});
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
  return CaseId{KW_TRY_WITH(find_kernel(parts[0]), context),
                KW_TRY_WITH(core::parse_pass(parts[1]), context),
                KW_TRY_WITH(core::parse_provider(parts[2]), context),
                KW_TRY_WITH(parse_backend(parts[3]), context)};
}

core::Result<CaseSpec> CaseSpec::from_workload(KernelRef kernel, const core::Workload& workload) {
  return kernel->parse_workload(workload);
}

core::Result<CaseSpec> CaseSpec::from_workload(const core::Workload& workload) {
  for (const KernelDescriptor* kernel : catalogue()) {
    if (auto spec = kernel->parse_workload(workload)) return spec;
  }
  return core::fail(ErrorCode::InvalidArgument,
                    "workload \"" + workload.label() + "\" is not a kernelwatch kernel's workload");
}

core::Workload workload_of(KernelRef kernel, const CaseSpec& spec) {
  return kernel->workload(spec);
}

core::Status validate(KernelRef kernel, const CaseSpec& spec) {
  return kernel->validate(spec);
}

std::int64_t bytes_moved(const CaseId& id, const CaseSpec& spec) {
  switch (id.pass) {
    case Pass::Forward:
      return id.kernel->forward_bytes(spec);
    case Pass::Backward:
      return id.kernel->backward_bytes(spec);
    case Pass::Full:
      return id.kernel->forward_bytes(spec) + id.kernel->backward_bytes(spec);
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
  if (!id.kernel->has_cuda) {
    return core::fail(ErrorCode::Unavailable,
                      id.name() + ": " + std::string(id.kernel->name) +
                          " has no CUDA implementation (its cpu cases run anywhere)");
  }
  KW_TRY_WITH(detail::cuda_available(), id.name());
  return detail::create_cuda_case(id, spec);
}

}  // namespace kernelwatch::kernels
