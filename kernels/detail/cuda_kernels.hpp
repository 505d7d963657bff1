// Private to kernels/ (.cu files only): what every kernel's CUDA entry points share. Each
// kernel's .cu defines the BackendOps its descriptor points at; launches are asynchronous on the
// case's stream. May include cuda_runtime.h.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "kernels/catalogue.hpp"

namespace kernelwatch::kernels::detail {

struct DeviceWorkspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// A kernel's device workspace from PassArgs.
[[nodiscard]] inline DeviceWorkspace workspace_of(const PassArgs& args) {
  return DeviceWorkspace{args.workspace, args.workspace_bytes};
}

// The cudaStream_t a CUDA case launches on.
[[nodiscard]] inline cudaStream_t stream_of(const PassArgs& args) {
  return static_cast<cudaStream_t>(args.stream);
}

}  // namespace kernelwatch::kernels::detail
