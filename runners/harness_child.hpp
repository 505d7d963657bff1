// kernelwatch's own kernels on every GPU of the host: one case on one GPU is run by a child
// `kernelwatch bench --json` (this very binary) that sees only that GPU (CUDA_VISIBLE_DEVICES),
// so the GPUs of an entry run their cases at once and a kernel that crashes or hangs takes down
// one child, not the daemon. The child's record is the in-process harness's record of the case
// (the same code, the same key), labelled by the daemon with the host and the GPU; a child that
// fails before it printed its record leaves a failed run in the case's key on that GPU
// (kernels::failed_record). Which entries run this way: harness_producer() below. Level 2: core/,
// kernels/ (the harness), this module's child processes and GPU inventory.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/key.hpp"
#include "core/placement.hpp"
#include "core/time.hpp"
#include "kernels/harness/bench.hpp"
#include "runners/gpus.hpp"
#include "runners/producer.hpp"
#include "runners/source_entry.hpp"

namespace kernelwatch::runners {

struct HarnessChildOptions {
  // The kernelwatch binary the child runs: this process's own (so the child's build, and the
  // implementation digest of its keys, is the daemon's even after the file was replaced).
  std::filesystem::path program = "/proc/self/exe";
  // A case checks its correctness, warms up and times its repetitions in well under a minute; a
  // child still running after this is killed and its run is a failed run (status timeout).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  int cancel_fd = -1;  // readable: the daemon stops (the child is killed, nothing is stored)
};

// The command line of the child that runs `request` and records it as observed at `observed`:
// `<program> bench --json --kernel K --pass P --provider X --backend B --workload W --warmup-ms
// .. --rep-ms .. --seed .. --observed-at T`.
[[nodiscard]] std::vector<std::string> harness_child_argv(const std::filesystem::path& program,
                                                          const kernels::BenchRequest& request,
                                                          core::Timestamp observed);

// What the CUDA runtime would say of `gpu`, from the inventory: the hardware of the key a run on
// it has.
[[nodiscard]] kernels::GpuInfo gpu_info_of(const GpuDevice& gpu);

// One case on one GPU, through a child.
class HarnessChildProducer final : public RunProducer {
 public:
  HarnessChildProducer(kernels::BenchRequest request, GpuDevice gpu, core::Placement placement,
                       HarnessChildOptions options)
      : request_(std::move(request)),
        gpu_(std::move(gpu)),
        placement_(std::move(placement)),
        options_(std::move(options)) {}
  // "tvd/backward/kernelwatch-fused/cuda tokens16384-vocab65536-fp32 on GPU 3"
  [[nodiscard]] std::string name() const override;
  // One run: the child's record, or a failed run of the case on this GPU. An error (no run) when
  // the case cannot run at all, as in the daemon's own process: the child said so on stderr
  // (`kernelwatch bench: ...`, status 1), or its workload has no key.
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;
  // The hardware an earlier producer's child named for the same GPU.
  void learn_from(const RunProducer& earlier) override;

 private:
  kernels::BenchRequest request_;
  GpuDevice gpu_;
  core::Placement placement_;
  HarnessChildOptions options_;
  // The hardware the last record of a child on this GPU named (the CUDA runtime's name of it):
  // the key a failed run is recorded in; before any, the inventory's (NVML's) name.
  std::optional<core::Hardware> hardware_;
  // The key a run of the case on this GPU has, derived for `expected_hardware_` (hardware_ then).
  std::optional<core::ComparabilityKey> expected_;
  std::optional<core::Hardware> expected_hardware_;
};

// The producer of one case of an entry of kernelwatch's own kernels whose `gpus` is `selection`:
// - in this process (kernels::run_benchmark on the daemon's CUDA device, as one run) when the
//   entry has no `gpus` and the host has at most one GPU, or the daemon's CUDA_VISIBLE_DEVICES
//   pins it, or the backend is the CPU's (without stand-in GPUs);
// - else a child per selected GPU, run at once (PerGpuProducer), each run labelled with its GPU;
// - a FailingProducer, whose message says why, when `gpus` names a GPU the host lacks, or is
//   given while the daemon runs its kernels on the CPU.
[[nodiscard]] std::shared_ptr<RunProducer> harness_producer(CycleHost& host,
                                                            const GpuSelection& selection,
                                                            kernels::BenchRequest request,
                                                            const HarnessHost& where,
                                                            const HarnessChildOptions& options);

}  // namespace kernelwatch::runners
