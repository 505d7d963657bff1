// The CUDA backend's Case: device tensors, one non-blocking stream, the CUDA entry points, and
// the "is there a GPU" probe.
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
    const auto& s = spec();
    std::size_t bytes = 0;
    if (id().kernel == Kernel::LayerNorm) {
      bytes = layer_norm_backward_cuda_workspace_bytes(id().provider, s.rows, s.cols, sm_count_);
    } else {
      bytes = std::max(tvd_forward_cuda_workspace_bytes(id().provider, s.rows, s.cols, s.dtype),
                       tvd_backward_cuda_workspace_bytes(id().provider, s.rows, s.cols));
    }
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

  core::Status layer_norm_forward(const LayerNormForward& args) override {
    return layer_norm_forward_cuda(id().provider, args, stream_);
  }
  core::Status layer_norm_backward(const LayerNormBackward& args) override {
    return layer_norm_backward_cuda(id().provider, args, workspace_, sm_count_, stream_);
  }
  core::Status tvd_forward(const TvdForward& args) override {
    return tvd_forward_cuda(id().provider, args, workspace_, stream_);
  }
  core::Status tvd_backward(const TvdBackward& args) override {
    return tvd_backward_cuda(id().provider, args, workspace_, stream_);
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
  auto instance = std::make_unique<CudaCase>(id, spec);
  KW_TRY(instance->allocate_all());
  return std::unique_ptr<Case>(std::move(instance));
}

}  // namespace kernelwatch::kernels::detail
