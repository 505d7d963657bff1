// The catalogue the measurement harness drives: every (kernel, pass, provider, backend) case,
// and a Case object per shape that allocates its tensors, fills them from a seed, runs, and
// hands its tensors back on the host. Plain C++ and core/ only; CUDA stays behind this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/key.hpp"
#include "kernels/types.hpp"

namespace kernelwatch::kernels {

struct KernelDescriptor;  // kernels/catalogue.hpp

// One kernel of the catalogue, found by its name like any other (kernels/catalogue.hpp).
class KernelRef {
 public:
  // The registered kernel `name` ("tvd", "layer_norm"): for names the code itself spells, where
  // a name not registered is a bug (it throws). Names from input go through find_kernel().
  explicit KernelRef(std::string_view name);
  explicit KernelRef(const KernelDescriptor& descriptor) : descriptor_(&descriptor) {}

  [[nodiscard]] const KernelDescriptor& operator*() const { return *descriptor_; }
  [[nodiscard]] const KernelDescriptor* operator->() const { return descriptor_; }
  [[nodiscard]] std::string_view name() const;
  friend bool operator==(KernelRef a, KernelRef b) { return a.descriptor_ == b.descriptor_; }

 private:
  const KernelDescriptor* descriptor_;
};

[[nodiscard]] std::string_view to_string(KernelRef kernel);  // its name

struct CaseId {
  KernelRef kernel = KernelRef("layer_norm");
  Pass pass = Pass::Forward;
  Provider provider = Provider::Fused;
  Backend backend = Backend::Cpu;

  // "layer_norm/backward", the comparability key's benchmark part.
  [[nodiscard]] std::string benchmark() const;
  // "layer_norm/backward/kernelwatch-fused/cpu"
  [[nodiscard]] std::string name() const;
  friend bool operator==(const CaseId&, const CaseId&) = default;
};

// Every case, in a fixed order (kernel in catalogue order, pass, provider, backend); the CUDA
// cases of the kernels that have a CUDA implementation.
[[nodiscard]] std::vector<CaseId> all_cases();
[[nodiscard]] std::vector<CaseId> cases_for(Backend backend);
// Parses CaseId::name()'s form.
[[nodiscard]] core::Result<CaseId> parse_case_id(std::string_view name);

// Which rows of a TVD case carry ignore_index: none (no labels tensor at all), about one in
// four (rows 1, 5, 9, ... always included), or all of them.
enum class IgnoredRows { None, Some, All };

// The shape and options of one case instance.
struct CaseSpec {
  std::int64_t rows = 0;  // LayerNorm and RMSNorm rows, TVD tokens
  std::int64_t cols = 0;  // LayerNorm and RMSNorm hidden, TVD vocab
  DType dtype = DType::Fp32;
  double eps = kDefaultLayerNormEps;           // LayerNorm, RMSNorm
  Reduction reduction = Reduction::BatchMean;  // TVD
  IgnoredRows ignored = IgnoredRows::None;     // TVD
  std::int64_t ignore_index = kDefaultIgnoreIndex;

  // From a canonical workload (core/key.hpp) of `kernel` (its descriptor's parser); TVD options
  // stay at their defaults.
  [[nodiscard]] static core::Result<CaseSpec> from_workload(KernelRef kernel,
                                                            const core::Workload& workload);
  // Of the first kernel of the catalogue whose workload it is.
  [[nodiscard]] static core::Result<CaseSpec> from_workload(const core::Workload& workload);
};

// The workload label form of a case of `kernel` (core/key.hpp).
[[nodiscard]] core::Workload workload_of(KernelRef kernel, const CaseSpec& spec);

// Shape, dtype and option checks for `kernel`, before anything is allocated.
[[nodiscard]] core::Status validate(KernelRef kernel, const CaseSpec& spec);

// The least bytes the pass must move between memory and the processor: every input read once,
// every output written once (full = forward + backward). The bandwidth floor of a run.
[[nodiscard]] std::int64_t bytes_moved(const CaseId& id, const CaseSpec& spec);

// A tensor copied to the host, in its storage type.
struct HostTensor {
  std::string name;
  ElementType type = ElementType::Fp32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::byte> bytes;

  [[nodiscard]] std::int64_t elements() const { return rows * cols; }
  [[nodiscard]] double value(std::int64_t index) const;  // converted exactly to double
  [[nodiscard]] std::vector<double> values() const;
};

// Finds a tensor by name in a list from Case::inputs()/outputs(); nullptr when absent.
[[nodiscard]] const HostTensor* find_tensor(const std::vector<HostTensor>& tensors,
                                            std::string_view name);

// One case at one shape. Its tensors are its kernel's plan (KernelDescriptor::plan), e.g.
//   layer_norm inputs x, weight, bias (+ dy; + mean, rstd for the backward pass);
//              outputs y, mean, rstd (forward), dx, dweight, dbias (backward), all six (full).
//   tvd        inputs p, q (+ labels when ignored != None; + grad_output for backward/full;
//              + grad for the backward pass); outputs loss, grad (forward), dp (backward), all
//              three (full).
// A backward-pass case computes its saved forward state (mean/rstd, grad) in prepare() with the
// same provider. run() may be called any number of times; each run gives the same bytes for the
// fused provider.
class Case {
 public:
  virtual ~Case() = default;
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;

  [[nodiscard]] const CaseId& id() const { return id_; }
  [[nodiscard]] const CaseSpec& spec() const { return spec_; }
  [[nodiscard]] std::int64_t bytes_moved() const { return kernels::bytes_moved(id_, spec_); }

  // Fills the inputs from `seed` (the same values on every backend) and computes the saved
  // forward state a backward pass needs.
  [[nodiscard]] virtual core::Status prepare(std::uint64_t seed) = 0;
  // launch() then synchronize().
  [[nodiscard]] core::Status run();
  // CPU: runs to completion. CUDA: enqueues the pass on stream() and returns.
  [[nodiscard]] virtual core::Status launch() = 0;
  // Waits for the launched work; reports an asynchronous device error.
  [[nodiscard]] virtual core::Status synchronize() = 0;
  // The cudaStream_t the CUDA case launches on (for timing events); nullptr on the CPU.
  [[nodiscard]] virtual void* stream() const = 0;
  // Fills every output with NaN bit patterns, so an element a run does not write fails a check.
  [[nodiscard]] virtual core::Status poison_outputs() = 0;
  [[nodiscard]] virtual core::Result<std::vector<HostTensor>> inputs() = 0;
  [[nodiscard]] virtual core::Result<std::vector<HostTensor>> outputs() = 0;

 protected:
  Case(CaseId id, CaseSpec spec) : id_(id), spec_(std::move(spec)) {}

 private:
  CaseId id_;
  CaseSpec spec_;
};

// Whether `backend` can run here: Cpu always; Cuda gives Unavailable with "not built with
// CUDA" or "no GPU: ..." (cudaGetDeviceCount failed or found none). create_case() also says
// Unavailable for a kernel without a CUDA implementation.
[[nodiscard]] core::Status backend_available(Backend backend);

// Validates `spec` for id.kernel first, then allocates every tensor (OutOfMemory when that
// fails). Inputs are unset until prepare().
[[nodiscard]] core::Result<std::unique_ptr<Case>> create_case(const CaseId& id,
                                                              const CaseSpec& spec);

}  // namespace kernelwatch::kernels
