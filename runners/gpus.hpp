// The GPUs of the host and which of them an entry runs on (`"gpus": "all"` or a list of indices
// or UUIDs), and the producer that runs one source on each of them at once: one process per GPU
// for external runners, each seeing only its GPU through CUDA_VISIBLE_DEVICES, probed and sampled
// on that GPU, its runs labelled with the host and the GPU (core/placement.hpp).
// The device enumeration is a seam (GpuInventory): NVML on a real host; a test on a machine
// without a GPU gives a fake list instead (KERNELWATCH_FAKE_GPUS, below). Level 2: core/,
// kernels/ (NVML).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/placement.hpp"
#include "runners/command.hpp"
#include "runners/liger_bench.hpp"
#include "runners/producer.hpp"

namespace kernelwatch::runners {

struct GpuDevice {
  unsigned index = 0;
  std::string uuid;        // "GPU-8c3a..." ("" when NVML did not say)
  std::string pci_bus_id;  // "00000000:19:00.0"
  std::string name;        // "NVIDIA H100 80GB HBM3"
  int compute_major = 0;
  int compute_minor = 0;
  std::uint64_t memory_bytes = 0;

  // What CUDA_VISIBLE_DEVICES names it by: the UUID when known (indices may be reordered by
  // CUDA_DEVICE_ORDER), else the index.
  [[nodiscard]] std::string visible_id() const;
};

// `gpus`: every GPU (the default), or these, by index ("3") or UUID ("GPU-...").
struct GpuSelection {
  bool all = true;
  std::vector<std::string> ids;
  bool given = false;  // the entry has `gpus`
};

// Reads `gpus` (absent: all). Errors name the field: not "all", not a list, an empty list, an
// entry neither a non-negative index nor a "GPU-" UUID, a GPU listed twice.
[[nodiscard]] core::Result<GpuSelection> read_gpu_selection(const core::JsonField& field);
[[nodiscard]] nlohmann::json gpu_selection_json(const GpuSelection& selection);
// The host's GPUs the selection names, in index order. A GPU named but absent is an error
// (`"gpus": [9]` on an 8-GPU host); "all" on a host without GPUs is the empty list.
[[nodiscard]] core::Result<std::vector<GpuDevice>> select_gpus(
    const GpuSelection& selection, const std::vector<GpuDevice>& devices);
// An entry whose `env` sets CUDA_VISIBLE_DEVICES (and has no `gpus`) runs on that GPU alone:
// the selection of that one GPU ("0", "GPU-..."); a list or anything else selects nothing of
// the inventory (the entry then runs once, as its env says, labelled with the host only).
[[nodiscard]] GpuSelection selection_for(
    const GpuSelection& selection, const std::vector<std::pair<std::string, std::string>>& env,
    bool* pinned = nullptr);

using GpuInventory = std::function<std::vector<GpuDevice>()>;

// The environment variable that replaces NVML's device list by a JSON file's, for tests on
// machines without a GPU (a stand-in for NVML, which cannot run there): an array of objects
// {"index", "uuid", "pci_bus_id", "name"}. The daemon logs a warning whenever it is set.
inline constexpr std::string_view kFakeGpusVariable = "KERNELWATCH_FAKE_GPUS";
// The warning a daemon logs when KERNELWATCH_FAKE_GPUS is set ("" when it is not).
[[nodiscard]] std::string fake_gpus_notice();
[[nodiscard]] core::Result<std::vector<GpuDevice>> read_fake_gpus(
    const std::filesystem::path& path);
// The GPUs NVML enumerates (none without NVML), or the fake list KERNELWATCH_FAKE_GPUS names
// (an unreadable one: no GPU, and the reason in `problem` when given).
[[nodiscard]] GpuInventory system_gpu_inventory(std::string* problem = nullptr);

// What decides where kernelwatch's own kernels run (runners/harness_child.hpp): whether the GPUs
// are the stand-in list of KERNELWATCH_FAKE_GPUS (a test without a GPU then runs the CPU
// backend's cases on each listed GPU, as CUDA cases would), and the daemon's own pin.
struct HarnessHost {
  bool stand_in_gpus = false;
  // The daemon's own CUDA_VISIBLE_DEVICES ("" when unset): an operator's pin of the daemon to
  // its GPUs, which an entry without `gpus` keeps.
  std::string daemon_visible_devices;
};
[[nodiscard]] HarnessHost this_harness_host();

// gethostname(), "localhost" when it fails.
[[nodiscard]] std::string host_name();
// The host identity of one of its GPUs: hardware from the GPU's name and compute capability,
// the driver of `host`, and the placement (host, index, UUID, PCIe bus id).
[[nodiscard]] HostIdentity on_device(const HostIdentity& host, const GpuDevice& device);
// The placement of a run on `device` of `host`.
[[nodiscard]] core::Placement placement_on(const std::string& host, const GpuDevice& device);

// A sampler of one GPU (by UUID, else index); NVML's, empty readings without it.
using DeviceSamplers = std::function<GpuSampler(const GpuDevice&)>;
[[nodiscard]] DeviceSamplers nvml_device_samplers();

// One source on several GPUs at once: a producer per GPU (each already bound to its GPU), run
// in parallel threads; their runs come back together in GPU order. All start at one instant;
// GPU i's runs are observed at that start + i ms (+ 1 us per clock reading): the runs of one key
// on two GPUs are two runs, never a duplicate, and every execution judges its GPUs in the same
// order.
class PerGpuProducer final : public RunProducer {
 public:
  PerGpuProducer(std::string name, std::vector<std::shared_ptr<RunProducer>> per_gpu)
      : name_(std::move(name)), per_gpu_(std::move(per_gpu)) {}
  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;
  [[nodiscard]] ConfirmMode confirm() const override;
  void learn_from(const RunProducer& earlier) override;

 private:
  static constexpr std::chrono::milliseconds kSpacing{1};
  std::string name_;
  std::vector<std::shared_ptr<RunProducer>> per_gpu_;
  std::optional<core::Timestamp> last_base_;
};

// A source that cannot run at all this cycle (its `gpus` names a GPU the host lacks).
class FailingProducer final : public RunProducer {
 public:
  FailingProducer(std::string name, std::string reason)
      : name_(std::move(name)), reason_(std::move(reason)) {}
  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] core::Result<Produced> run(const std::function<core::Timestamp()>& now) override;

 private:
  std::string name_;
  std::string reason_;
};

}  // namespace kernelwatch::runners
