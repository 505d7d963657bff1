// A config entry of a run source that has a `runner` (command, liger-bench, liger-scripts), behind
// one interface: what the config loader, the schedule, the status and `kernelwatch discover` need
// of it (its name, its logged form, its producers for a cycle, its listed cases). Each source
// implements it in its own files (runners/<source>_config.*) and registers its reader with one
// line in runners/sources.cpp; config/ and daemon/ reach a runner's entries only through here and
// runners/sources.hpp. Level 2: core/ (JsonField), kernels/ (workloads), this module's runners.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "kernels/harness/timing.hpp"
#include "kernels/registry.hpp"
#include "runners/command.hpp"
#include "runners/gpus.hpp"
#include "runners/producer.hpp"

namespace kernelwatch::runners {

// What the config loader lends a source's reader: the things only it knows (how durations are
// written, where relative paths start, how values are quoted in messages) and its readers of what
// entries of a kernel share, so that every entry's messages read alike.
struct EntryReaderServices {
  // A duration string of at least `minimum` ("20m"), with the config's own messages.
  std::function<core::Result<std::chrono::milliseconds>(const core::JsonField&,
                                                        std::chrono::milliseconds minimum)>
      duration;
  // A path relative to the config file's directory, made absolute.
  std::function<std::filesystem::path(const std::string&)> resolve;
  // A value as the config's messages quote it (never one that may be a secret: a URL).
  std::function<std::string(std::string_view)> shown;
  // OK when every key of the object is one of `allowed`; else "unknown field" on the first other.
  std::function<core::Status(const core::JsonField&, const std::vector<std::string_view>& allowed)>
      known_fields;
  // Workload labels of `kernel` (its descriptor's form), none twice, each passing `check` (a
  // runner's own limits) when given.
  std::function<core::Result<std::vector<core::Workload>>(
      const core::JsonField&, kernels::KernelRef kernel,
      const std::function<core::Status(const core::Workload&)>& check)>
      workloads;
};

// How kernelwatch's own kernels are timed: the daemon's backend, the config's `bench` section.
struct HarnessSettings {
  kernels::Backend backend = kernels::Backend::Cpu;
  kernels::TimingPolicy policy;
  std::uint64_t seed = 1;
};

// What a cycle's runners share: the daemon's probe of the host, its GPU sampler, the pipe that
// stops a program when the daemon stops, and the host's GPUs (an entry that runs per GPU runs on
// each GPU its `gpus` selects: one producer per GPU, run at once, or one process when the host
// has none).
struct RunnerServices {
  GpuSampler sampler;
  HostProbe probe;
  int cancel_fd = -1;
  GpuInventory inventory;         // empty: no GPU enumeration (one process per entry)
  DeviceSamplers device_sampler;  // empty: no samples of a selected GPU
  // Of kernelwatch's own kernels: whether the GPUs are stand-ins, the daemon's own pin.
  HarnessHost harness_host;
  // Of kernelwatch's own kernels: the backend the daemon runs them on and the config's timing.
  HarnessSettings harness;
};

// One cycle plan's view of the host: the services, and the host's GPUs and identity, found once
// per plan and only when an entry asks for GPUs.
class CycleHost {
 public:
  explicit CycleHost(const RunnerServices& services) : services_(services) {}

  [[nodiscard]] const RunnerServices& services() const { return services_; }
  // The host's GPUs that `selection` names for an entry whose env is `env` (runners/gpus.hpp:
  // selection_for); an error names a GPU the host lacks.
  [[nodiscard]] core::Result<std::vector<GpuDevice>> select(
      const GpuSelection& selection, const std::vector<std::pair<std::string, std::string>>& env);
  // One producer named `name` made by `make` on each of `gpus` (run at once), or `make(nullptr,
  // host)` when there are none. Call after select().
  using MakeOnGpu =
      std::function<std::shared_ptr<RunProducer>(const GpuDevice* gpu, HostIdentity on)>;
  [[nodiscard]] std::shared_ptr<RunProducer> per_gpu(const std::string& name,
                                                     const std::vector<GpuDevice>& gpus,
                                                     const MakeOnGpu& make);

 private:
  const RunnerServices& services_;
  std::optional<std::vector<GpuDevice>> devices_;
  std::optional<HostIdentity> host_;
};

// A `pass` field of an entry (forward, backward, full); the message lists the accepted names.
[[nodiscard]] core::Result<core::Pass> read_pass(const core::JsonField& field,
                                                 const EntryReaderServices& services);

// How the config writes a duration ("20m"), for an entry's logged form.
using DurationText = std::function<std::string(std::chrono::milliseconds)>;

class SourceEntry {
 public:
  virtual ~SourceEntry() = default;
  // The `runner` of its config entry ("command").
  [[nodiscard]] virtual std::string_view runner() const = 0;
  // What runs its entries in the status and `kernelwatch status` ("command"): runner() by default.
  [[nodiscard]] virtual std::string_view runner_shown() const { return runner(); }
  // Its name in the schedule, logs, the status and discover; no two entries of a config share
  // one: a command entry's `name`, "liger-bench tvd/backward".
  [[nodiscard]] virtual std::string name() const = 0;
  // The config error of this entry (`object`) when an earlier entry (at `earlier`, its path) has
  // its name. Default: "<name>.name: "x" is already the name of benchmarks[0]".
  [[nodiscard]] virtual core::Status name_taken(const core::JsonField& object,
                                                const std::string& earlier,
                                                const EntryReaderServices& services) const;
  // The effective entry for the logged config, in the file's field names, defaults filled in and
  // every value that may be a secret replaced by "<redacted>"; without `interval` (the config
  // loader's, for every entry). Durations are written as `duration` says.
  [[nodiscard]] virtual nlohmann::json to_json(const DurationText& duration) const = 0;
  // What a cycle runs of it, in order; one that cannot run this cycle is a FailingProducer named
  // name(), whose runs say why.
  [[nodiscard]] virtual std::vector<std::shared_ptr<RunProducer>> producers(
      CycleHost& host) const = 0;
  // `kernelwatch discover --list`: its cases, nothing run. Default: an error saying that an entry
  // of its runner cannot list its cases without running them.
  [[nodiscard]] virtual core::Result<std::vector<ListedCase>> list_cases(
      const CommandContext& context) const;
  // Why `kernelwatch discover` passes its entries by ("its keys are its config's cases"), or
  // nullopt (default) when discover runs or lists them.
  [[nodiscard]] virtual std::optional<std::string> not_discovered() const { return std::nullopt; }
};

}  // namespace kernelwatch::runners
