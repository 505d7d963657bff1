// The CUDA backend's Case: device tensors, one non-blocking stream, the kernel's CUDA entry
// points, and the "is there a GPU" probe.
#include <map>
#include <memory>
#include <string>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/cuda_check.hpp"
#include "kernels/detail/cuda_kernels.hpp"
#include "kernels/detail/planned_case.hpp"

namespace kernelwatch::kernels::detail {

tl::unexpected<core::Error> cuda_failure(cudaError_t status, const char* expression,
                                         const char* file, int line) {
  (void)cudaGetLastError();
  const auto code = status == cudaErrorMemoryAllocation ? core::ErrorCode::OutOfMemory
                                                        : core::ErrorCode::DeviceError;
  return core::fail(code, std::string(file) + ":" + std::to_string(line) + ": " + expression +
                              " failed: " + cudaGetErrorName(status) + ": " +
                              cudaGetErrorString(status));
}

core::Status cuda_available() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return core::fail(core::ErrorCode::Unavailable,
                      std::string("cuda backend: no GPU: cudaGetDeviceCount failed: ") +
                          cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
  }
  if (devices == 0) {
    return core::fail(core::ErrorCode::Unavailable, "cuda backend: no GPU: no CUDA device found");
  }
  return {};
}

namespace {

struct DeviceFree {
  void operator()(void* data) const { (void)cudaFree(data); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

class CudaCase final : public PlannedCase {
 public:
  CudaCase(const CaseId& id, const CaseSpec& spec) : PlannedCase(id, spec) {}
  ~CudaCase() override {
    if (stream_ != nullptr) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
  }

  core::Status allocate_all() {
    KW_CUDA_TRY(cudaGetDevice(&device_));
    KW_CUDA_TRY(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    KW_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (const auto& tensor : plan()) {
      buffers_.emplace(tensor.name, KW_TRY(allocate(tensor.bytes(), "tensor " + tensor.name)));
    }
    const std::size_t bytes = ops().workspace_bytes(id().provider, spec(), sm_count_);
    auto buffer = KW_TRY(allocate(bytes, "the workspace"));
    workspace_ = DeviceWorkspace{buffer.get(), bytes};
    workspace_buffer_ = std::move(buffer);
    return {};
  }

  core::Status synchronize() override {
    KW_CUDA_TRY(cudaStreamSynchronize(stream_));
    return {};
  }
  void* stream() const override { return stream_; }

 protected:
  void* data(const std::string& name) const override {
    const auto it = buffers_.find(name);
    return it == buffers_.end() ? nullptr : it->second.get();
  }
  void* host_data(const std::string&) const override { return nullptr; }
  core::Status upload(const TensorPlan& plan, const void* host) override {
    KW_CUDA_TRY(
        cudaMemcpyAsync(data(plan.name), host, plan.bytes(), cudaMemcpyHostToDevice, stream_));
    KW_CUDA_TRY(cudaStreamSynchronize(stream_));
    return {};
  }
  core::Status download(const TensorPlan& plan, void* host) override {
    KW_CUDA_TRY(
        cudaMemcpyAsync(host, data(plan.name), plan.bytes(), cudaMemcpyDeviceToHost, stream_));
    KW_CUDA_TRY(cudaStreamSynchronize(stream_));
    return {};
  }
  core::Status fill_bytes(const TensorPlan& plan, unsigned char value) override {
    KW_CUDA_TRY(cudaMemsetAsync(data(plan.name), value, plan.bytes(), stream_));
    return {};
  }

  // create_cuda_case() checked that the kernel has them.
  const BackendOps& ops() const override { return *id().kernel->cuda; }
  PassArgs backend_args() const override {
    PassArgs args;
    args.workspace = workspace_.data;
    args.workspace_bytes = workspace_.bytes;
    args.stream = stream_;
    args.sm_count = sm_count_;
    return args;
  }

 private:
  static core::Result<DeviceBuffer> allocate(std::size_t bytes, const std::string& what) {
    void* data = nullptr;
    const cudaError_t status = cudaMalloc(&data, bytes == 0 ? 1 : bytes);
    if (status != cudaSuccess) {
      auto error = cuda_failure(status, "cudaMalloc", __FILE__, __LINE__);
      return tl::unexpected(error.value().with_context("cuda: allocating " + std::to_string(bytes) +
                                                       " bytes for " + what));
    }
    return DeviceBuffer(data);
  }

  int device_ = 0;
  int sm_count_ = 1;
  cudaStream_t stream_ = nullptr;
  std::map<std::string, DeviceBuffer> buffers_;
  DeviceBuffer workspace_buffer_;
  DeviceWorkspace workspace_;
};

}  // namespace

core::Result<std::unique_ptr<Case>> create_cuda_case(const CaseId& id, const CaseSpec& spec) {
  if (id.kernel->cuda == nullptr) {
    return core::fail(
        core::ErrorCode::Unavailable,
        id.name() + ": " + std::string(id.kernel->name) + " has no CUDA implementation");
  }
  auto instance = std::make_unique<CudaCase>(id, spec);
  KW_TRY(instance->allocate_all());
  return std::unique_ptr<Case>(std::move(instance));
}

}  // namespace kernelwatch::kernels::detail
