// The CPU backend's Case: 64-byte aligned host tensors and the kernel's CPU entry points.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/planned_case.hpp"

namespace kernelwatch::kernels::detail {
namespace {

struct FreeDeleter {
  void operator()(std::byte* data) const { std::free(data); }
};
using HostBuffer = std::unique_ptr<std::byte, FreeDeleter>;

core::Result<HostBuffer> allocate(std::size_t bytes, const std::string& what) {
  constexpr std::size_t kAlign = 64;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  auto* data = static_cast<std::byte*>(std::aligned_alloc(kAlign, rounded));
  if (data == nullptr) {
    return core::fail(core::ErrorCode::OutOfMemory, "cpu: allocating " + std::to_string(bytes) +
                                                        " bytes for " + what + " failed");
  }
  return HostBuffer(data);
}

class CpuCase final : public PlannedCase {
 public:
  CpuCase(const CaseId& id, const CaseSpec& spec) : PlannedCase(id, spec) {}

  core::Status allocate_all() {
    for (const auto& tensor : plan()) {
      buffers_.emplace(tensor.name, KW_TRY(allocate(tensor.bytes(), "tensor " + tensor.name)));
    }
    const std::size_t workspace = ops().workspace_bytes(id().provider, spec(), 1);
    workspace_ = KW_TRY(allocate(workspace, "the workspace"));
    workspace_bytes_ = workspace;
    return {};
  }

  core::Status synchronize() override { return {}; }
  void* stream() const override { return nullptr; }

 protected:
  void* data(const std::string& name) const override {
    const auto it = buffers_.find(name);
    return it == buffers_.end() ? nullptr : it->second.get();
  }
  void* host_data(const std::string& name) const override { return data(name); }
  core::Status upload(const TensorPlan& plan, const void* host) override {
    std::memcpy(data(plan.name), host, plan.bytes());
    return {};
  }
  core::Status download(const TensorPlan& plan, void* host) override {
    std::memcpy(host, data(plan.name), plan.bytes());
    return {};
  }
  core::Status fill_bytes(const TensorPlan& plan, unsigned char value) override {
    std::memset(data(plan.name), value, plan.bytes());
    return {};
  }

  const BackendOps& ops() const override { return id().kernel->cpu; }
  PassArgs backend_args() const override {
    PassArgs args;
    args.workspace = workspace_.get();
    args.workspace_bytes = workspace_bytes_;
    return args;
  }

 private:
  std::map<std::string, HostBuffer> buffers_;
  HostBuffer workspace_;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace

core::Result<std::unique_ptr<Case>> create_cpu_case(const CaseId& id, const CaseSpec& spec) {
  auto instance = std::make_unique<CpuCase>(id, spec);
  KW_TRY(instance->allocate_all());
  return std::unique_ptr<Case>(std::move(instance));
}

}  // namespace kernelwatch::kernels::detail
