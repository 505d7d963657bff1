// The liger-bench runner: reruns Liger-Kernel's and PyTorch's own TVD and LayerNorm benchmarks
// through runners/liger/liger_bench.py in the host's Python, and turns each result into the
// record the Liger CSV import gives the same row (runners/liger_csv.hpp), so a rerun lands in
// the key of the imported history. Every failure is a `failed` run with a reason. Level 2: uses
// core/, storage/ (the CSV mapping) and kernels/ (the catalogue's kernels by name, the NVML
// environment probe).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/key.hpp"
#include "core/names.hpp"
#include "core/placement.hpp"
#include "kernels/harness/bench.hpp"
#include "kernels/harness/environment.hpp"
#include "kernels/registry.hpp"

namespace kernelwatch::runners {

// The runner's name in configs and on the command line.
inline constexpr std::string_view kLigerBenchRunner = "liger-bench";
// sourceNative.source of its runs: the daemon's own runs (a breach is confirmed by a rerun).
inline constexpr std::string_view kLigerBenchSource = "kernelwatch-liger-bench";

// The providers liger_bench.py times: liger and torch for tvd, liger and huggingface
// (torch.nn.LayerNorm) for layer_norm.
enum class LigerProvider { Liger, Torch, Huggingface };
inline constexpr LigerProvider kLigerProviders[] = {LigerProvider::Liger, LigerProvider::Torch,
                                                    LigerProvider::Huggingface};
[[nodiscard]] std::string_view to_string(LigerProvider provider) noexcept;
[[nodiscard]] core::Result<LigerProvider> parse_liger_provider(std::string_view text);
// The kernels liger_bench.py times (Liger's TVD and LayerNorm benchmarks), by their names in the
// catalogue of kernels/ (their workloads are those kernels' forms), in the order messages list
// them.
inline constexpr std::string_view kLigerBenchKernels[] = {"tvd", "layer_norm"};
// "tvd, layer_norm"
[[nodiscard]] std::string liger_bench_kernel_names();
// The kernel of kLigerBenchKernels named `text`; InvalidArgument otherwise:
// `unknown kernel "conv" (known: tvd, layer_norm)`.
[[nodiscard]] core::Result<kernels::KernelRef> parse_liger_bench_kernel(std::string_view text);
// False for a kernel liger-bench does not run.
[[nodiscard]] bool supports(kernels::KernelRef kernel, LigerProvider provider) noexcept;
// "liger, torch" for tvd; "liger, huggingface" for layer_norm; "" for another kernel.
[[nodiscard]] std::string providers_of(kernels::KernelRef kernel);

struct LigerCase {
  kernels::KernelRef kernel = kernels::KernelRef("tvd");  // one of kLigerBenchKernels
  core::Pass pass = core::Pass::Forward;
  LigerProvider provider = LigerProvider::Liger;
  core::Workload workload;

  // "tvd/backward/torch/liger-bench tokens16384-vocab65536-fp32"
  [[nodiscard]] std::string name() const;
};

// Whether liger_bench.py can time this case: provider valid for the kernel, a workload of the
// kernel in fp32 or bf16, and for the liger LayerNorm the default eps (LigerLayerNorm is built
// without it, as in Liger's script). InvalidArgument says what is wrong.
[[nodiscard]] core::Status validate(const LigerCase& c);

// The request object of one case: the inverse of the importer's row -> workload mapping
// (tvd: x_name V, x_value vocab, config {"B": 8, "T": tokens / 8}, or B 1 when tokens is not a
// multiple of 8; layer_norm: x_name N, x_value hidden, config {"M": rows, "dtype", "eps"}).
[[nodiscard]] core::Result<nlohmann::json> request_case(const LigerCase& c);

// A GPU reading before or after a case; the pid is the runner child's (its own compute process).
using GpuSampler = std::function<kernels::GpuSample(int child_pid)>;
// NVML on device 0 (empty readings without NVML).
[[nodiscard]] GpuSampler nvml_sampler();

struct LigerBenchOptions {
  std::filesystem::path python = "python3";
  std::filesystem::path script;  // liger_bench.py; empty: default_script()
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // the whole child run
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};
  std::vector<std::pair<std::string, std::string>> environment;  // e.g. PYTHONPATH
  // The GPU a failed run is recorded on when the runner never said (it could not start).
  std::string fallback_gpu_name = "unknown";
  GpuSampler sampler;  // empty: no environment probe (every run stays passed/failed)
  int cancel_fd = -1;  // readable: the daemon stops; the runner is killed at once
  // The host and GPU it runs on, labels of every run (LigerBenchProducer; an empty label is
  // removed); nullopt: the runs keep the labels the runner gave them (`kernelwatch bench`).
  std::optional<core::Placement> placement = core::Placement{};
};

// Where liger_bench.py is: <binary dir>/../share/kernelwatch/runners/liger/liger_bench.py when
// installed, else the source tree's runners/liger/liger_bench.py. NotFound when neither exists.
[[nodiscard]] core::Result<std::filesystem::path> default_script();

// Runs every case in one child process, in order; returns one record per case, in order. Never
// fails as a whole: a case that produced no valid result is a `failed` record with the reason.
// `now` dates the runs (the time each result arrived).
[[nodiscard]] std::vector<core::Record> run_liger_bench(
    const LigerBenchOptions& options, const std::vector<LigerCase>& cases,
    const std::function<core::Timestamp()>& now);

}  // namespace kernelwatch::runners
