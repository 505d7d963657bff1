// Private to kernels/: the part of a Case both backends share. Its kernel's descriptor decides
// which tensors a (kernel, pass) needs and fills inputs from the seed on the host; this sequences
// the passes; a backend supplies memory, a workspace and its BackendOps. Plain C++ and core/ only
// (the CUDA backend derives from it inside a .cu file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/catalogue.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::kernels::detail {

// The tensors of one case, in a fixed order; spec must be valid.
[[nodiscard]] std::vector<TensorPlan> plan_tensors(const CaseId& id, const CaseSpec& spec);

class PlannedCase : public Case {
 public:
  core::Status prepare(std::uint64_t seed) final;
  core::Status launch() final;
  core::Status poison_outputs() final;
  core::Result<std::vector<HostTensor>> inputs() final;
  core::Result<std::vector<HostTensor>> outputs() final;

 protected:
  PlannedCase(const CaseId& id, const CaseSpec& spec);

  [[nodiscard]] const std::vector<TensorPlan>& plan() const { return plan_; }
  // The tensor's memory on the backend (host or device); nullptr when not in the plan.
  [[nodiscard]] virtual void* data(const std::string& name) const = 0;
  // Host memory the input can be filled in directly (CPU), or nullptr to stage and upload.
  [[nodiscard]] virtual void* host_data(const std::string& name) const = 0;
  [[nodiscard]] virtual core::Status upload(const TensorPlan& plan, const void* host) = 0;
  [[nodiscard]] virtual core::Status download(const TensorPlan& plan, void* host) = 0;
  [[nodiscard]] virtual core::Status fill_bytes(const TensorPlan& plan, unsigned char value) = 0;

  // The backend's entry points of this case's kernel, and the arguments of a pass with the
  // backend's workspace, stream and SM count filled in (provider, spec and tensors are added).
  [[nodiscard]] virtual const BackendOps& ops() const = 0;
  [[nodiscard]] virtual PassArgs backend_args() const = 0;

  [[nodiscard]] TensorRef ref(std::string_view name) const;

 private:
  [[nodiscard]] PassArgs pass_args() const;
  [[nodiscard]] core::Status run_forward();
  [[nodiscard]] core::Status run_backward();
  [[nodiscard]] core::Result<std::vector<HostTensor>> copy_out(bool outputs);

  std::vector<TensorPlan> plan_;
};

}  // namespace kernelwatch::kernels::detail
