// Private to kernels/: the part of a Case both backends share. It decides which tensors a
// (kernel, pass) needs, fills inputs from the seed on the host, builds the LayerNorm/TVD argument
// structs and sequences the passes; a backend supplies memory and the four kernel entry points.
// Plain C++ and core/ only (the CUDA backend derives from it inside a .cu file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/registry.hpp"
#include "kernels/tvd.hpp"

namespace kernelwatch::kernels::detail {

// Input: filled from the seed. State: the forward output a backward-only pass reads (prepare()
// computes it). Output: what the pass writes. Scratch: written but not reported.
enum class Role { Input, State, Output, Scratch };

struct TensorPlan {
  std::string name;
  ElementType type = ElementType::Fp32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Role role = Role::Input;

  [[nodiscard]] std::size_t bytes() const {
    return static_cast<std::size_t>(rows * cols) * element_size(type);
  }
};

// The tensors of one case, in a fixed order; spec must be valid.
[[nodiscard]] std::vector<TensorPlan> plan_tensors(const CaseId& id, const CaseSpec& spec);

// Writes input `plan` (an Input-role tensor) as host bytes, a pure function of (spec, seed,
// name, element index), filled in parallel on the CPU pool.
void fill_input(const CaseSpec& spec, const TensorPlan& plan, std::uint64_t seed, void* host);

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

  [[nodiscard]] virtual core::Status layer_norm_forward(const LayerNormForward& args) = 0;
  [[nodiscard]] virtual core::Status layer_norm_backward(const LayerNormBackward& args) = 0;
  [[nodiscard]] virtual core::Status tvd_forward(const TvdForward& args) = 0;
  [[nodiscard]] virtual core::Status tvd_backward(const TvdBackward& args) = 0;

  [[nodiscard]] TensorRef ref(const std::string& name) const;

 private:
  [[nodiscard]] core::Status run_forward();
  [[nodiscard]] core::Status run_backward();
  [[nodiscard]] core::Result<std::vector<HostTensor>> copy_out(bool outputs);

  std::vector<TensorPlan> plan_;
};

}  // namespace kernelwatch::kernels::detail
