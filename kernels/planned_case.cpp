// The backend-independent half of a Case: tensor plans, seeded inputs, pass sequencing.
#include "kernels/detail/planned_case.hpp"

#include <cstring>

namespace kernelwatch::kernels::detail {

std::vector<TensorPlan> plan_tensors(const CaseId& id, const CaseSpec& spec) {
  return id.kernel->plan(id.pass, spec);
}

PlannedCase::PlannedCase(const CaseId& id, const CaseSpec& spec)
    : Case(id, spec), plan_(plan_tensors(id, spec)) {}

TensorRef PlannedCase::ref(std::string_view name) const {
  for (const auto& tensor : plan_) {
    if (tensor.name == name) {
      return TensorRef{data(tensor.name), tensor.type, tensor.rows, tensor.cols};
    }
  }
  return TensorRef{};
}

PassArgs PlannedCase::pass_args() const {
  PassArgs args = backend_args();
  args.provider = id().provider;
  args.spec = &spec();
  args.tensor = [this](std::string_view name) { return ref(name); };
  return args;
}

core::Status PlannedCase::prepare(std::uint64_t seed) {
  for (const auto& tensor : plan_) {
    if (tensor.role != Role::Input) continue;
    if (void* host = host_data(tensor.name)) {
      id().kernel->fill_input(spec(), tensor, seed, host);
      continue;
    }
    std::vector<std::byte> staging;
    try {
      staging.resize(tensor.bytes());
    } catch (const std::bad_alloc&) {
      return core::fail(core::ErrorCode::OutOfMemory, "staging " + std::to_string(tensor.bytes()) +
                                                          " host bytes for input " + tensor.name);
    }
    id().kernel->fill_input(spec(), tensor, seed, staging.data());
    KW_TRY(upload(tensor, staging.data()));
  }
  if (id().pass == Pass::Backward) {
    KW_TRY(run_forward());
    return synchronize();
  }
  return {};
}

core::Status PlannedCase::run_forward() {
  return ops().forward(pass_args());
}

core::Status PlannedCase::run_backward() {
  return ops().backward(pass_args());
}

core::Status PlannedCase::launch() {
  switch (id().pass) {
    case Pass::Forward:
      return run_forward();
    case Pass::Backward:
      return run_backward();
    case Pass::Full:
      KW_TRY(run_forward());
      return run_backward();
  }
  return {};
}

core::Status PlannedCase::poison_outputs() {
  for (const auto& tensor : plan_) {
    if (tensor.role != Role::Output) continue;
    // 0xff.. is a NaN in fp32 and in bf16.
    KW_TRY(fill_bytes(tensor, 0xff));
  }
  return synchronize();
}

core::Result<std::vector<HostTensor>> PlannedCase::copy_out(bool outputs) {
  KW_TRY(synchronize());
  std::vector<HostTensor> result;
  for (const auto& tensor : plan_) {
    const bool wanted = outputs ? tensor.role == Role::Output
                                : (tensor.role == Role::Input || tensor.role == Role::State);
    if (!wanted) continue;
    HostTensor host{tensor.name, tensor.type, tensor.rows, tensor.cols, {}};
    try {
      host.bytes.resize(tensor.bytes());
    } catch (const std::bad_alloc&) {
      return core::fail(core::ErrorCode::OutOfMemory, "copying " + std::to_string(tensor.bytes()) +
                                                          " bytes of " + tensor.name +
                                                          " to the host");
    }
    KW_TRY(download(tensor, host.bytes.data()));
    result.push_back(std::move(host));
  }
  return result;
}

core::Result<std::vector<HostTensor>> PlannedCase::inputs() {
  return copy_out(false);
}
core::Result<std::vector<HostTensor>> PlannedCase::outputs() {
  return copy_out(true);
}

}  // namespace kernelwatch::kernels::detail
