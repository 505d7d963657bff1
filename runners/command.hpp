// The `command` runner: any benchmark program, run as an argv (no shell) with a minimal
// environment, its output read in the format its entry declares (runners/formats.hpp). Each
// result becomes one run in one key: benchmark `<entry name>/<native name>`, workload from the
// native parameters in canonical order, provider from the entry or the output, environment from
// the daemon's own probe of the host (the program's device claim is only checked against it),
// protocol from the format, the harness's version and the argv template. Exit 0 means parse; a
// non-zero exit, a signal, the timeout or output that does not parse makes a failed run with the
// reason in every key the entry produced before (never a partial output judged). Level 2: core/,
// kernels/ (GPU samples, CPU probe, quantiles), storage/ (the Liger CSV mapping).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/placement.hpp"
#include "core/record.hpp"
#include "core/time.hpp"
#include "kernels/harness/bench.hpp"
#include "kernels/harness/environment.hpp"
#include "runners/child_process.hpp"
#include "runners/formats.hpp"
#include "runners/liger_bench.hpp"

namespace kernelwatch::runners {

inline constexpr std::string_view kCommandRunner = "command";
// sourceNative.source of its runs.
inline constexpr std::string_view kCommandSource = "kernelwatch-command";
// The placeholder of a fresh output path in `command` and `output`.
inline constexpr std::string_view kOutPlaceholder = "{out}";

// How a breach of one of the entry's keys is confirmed: by running the whole entry again at once,
// or by its next scheduled run (a sweep that takes an hour).
enum class ConfirmMode { Rerun, Next };

// Environment variables that change a program's timings: recorded with every run (the
// environment document's settings.environmentVariables), so a changed one is visible. Names
// listed here or starting with one of kTimingVariablePrefixes.
[[nodiscard]] bool changes_timing(std::string_view variable);

struct CommandEntry {
  std::string name;                  // ^[a-z0-9][a-z0-9._-]*$: the benchmark prefix
  std::vector<std::string> command;  // argv template; {out} is the output path
  OutputFormat format = OutputFormat::GbenchJson;
  std::string output = "stdout";  // "stdout", or a path template containing {out}
  std::string provider;           // "": the output's own provider field, else the entry name
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};
  std::vector<std::pair<std::string, std::string>> env;  // on top of the minimal environment
  std::filesystem::path working_directory;               // "": the daemon's
  ConfirmMode confirm = ConfirmMode::Rerun;
  std::size_t max_output_bytes = 64 * 1024 * 1024;

  // The argv template as one line ("./bench --benchmark_format=json"), for the protocol.
  [[nodiscard]] std::string command_line() const;
};

// The host the daemon measures on, from its own probe: the GPU (NVML) when there is one, else
// the CPU.
struct HostIdentity {
  core::Hardware hardware;
  std::uint64_t memory_bytes = 0;
  std::string driver;         // "" without a GPU
  std::string gpu_name;       // as NVML names it; "" without a GPU
  core::Placement placement;  // this host, and the GPU probed (labels of every run)
};
using HostProbe = std::function<HostIdentity()>;
// NVML's device 0 when NVML finds one, else the CPU this process runs on (runners/gpus.hpp's
// on_device() gives another GPU's).
[[nodiscard]] HostProbe system_host_probe();

// A key an entry produced, remembered so that a later failed execution is recorded in it.
struct KnownKey {
  std::string benchmark;
  std::string provider;
  std::string workload;
  nlohmann::json protocol;  // the BenchmarkProtocol document of its last run
};

struct CommandContext {
  std::function<core::Timestamp()> now;
  HostProbe probe;     // required
  GpuSampler sampler;  // empty: no GPU samples (runs stay passed)
  std::chrono::milliseconds sample_every{std::chrono::seconds(1)};
  int cancel_fd = -1;             // readable: the daemon stops
  std::filesystem::path scratch;  // where {out} paths are made; "": $TMPDIR or /tmp
  // Set for the program on top of the entry's env and never recorded as a setting of the run:
  // CUDA_VISIBLE_DEVICES of the GPU it runs on (the run's labels say which GPU).
  std::vector<std::pair<std::string, std::string>> device_env;
};

// What one execution of an entry produced.
struct CommandOutcome {
  std::vector<core::Record> runs;  // one per key, failed ones included (times: the records')
  std::vector<KnownKey> keys;      // the keys of this execution (for the next one)
  std::string error;               // why the whole execution failed ("" it did not)
  bool cancelled = false;          // the daemon stopped it: nothing to store
};

// Runs the entry once. `known`: the keys of its earlier executions (a failure is recorded in
// each; with none, in the key `<entry>/command`).
[[nodiscard]] CommandOutcome run_command(const CommandEntry& entry, const CommandContext& context,
                                         const std::vector<KnownKey>& known);

// The runs of an output the entry's program wrote (`text`, in the entry's format), recorded exactly
// as an execution of the entry records them (the same keys: benchmark prefix, provider, protocol,
// environment from `host`), observed at `observed`, without running anything: `kernelwatch compare
// --against` reads a candidate's output this way. ParseError when the output is not the format or
// has no result ("format mismatch (gbench-json): ...").
[[nodiscard]] core::Result<std::vector<core::Record>> runs_from_output(
    const CommandEntry& entry, const std::string& text, const HostIdentity& host,
    core::Timestamp observed);

// A case a program names without running it.
struct ListedCase {
  std::string benchmark;  // "<entry>/<native name>", as a run's key says it
  std::string provider;
  // The workload label a run's key would have; "" when only a run says it (pytest's collection
  // names a case by its parameter id, "[4096-bf16]", not by its parameter names).
  std::string workload;
  std::string case_id;  // as the harness lists it: "BM_Saxpy/16384", "test_saxpy[4096-bf16]"
};

// Whether the entry's format can list its cases without running them, and how: Google
// Benchmark's --benchmark_list_tests=true, pytest's --collect-only -q (pytest-benchmark).
[[nodiscard]] bool can_list(OutputFormat format) noexcept;

// Runs the entry's argv with the harness's listing flag added (the entry's environment, working
// directory and timeout) and reads the cases it names; nothing is measured. Unavailable for a
// format that cannot list (the message says the entry must run); a program that cannot start,
// exits non-zero or lists nothing is an error with the reason.
[[nodiscard]] core::Result<std::vector<ListedCase>> list_command(const CommandEntry& entry,
                                                                 const CommandContext& context);

// The entry's program run once, as a cycle runs it but for `environment_base` (compare's argv
// form inherits the caller's environment, a config entry gets the minimal one), its output text
// as the entry reads it (stdout, or the file its {out} names). An error with the reason a failed
// run would carry: the program missing, a non-zero exit with its stderr, the timeout, an output
// over max_output_bytes or not written. With a context.sampler, the GPU is sampled when the
// program starts and every context.sample_every while it runs, into `samples` (when given).
[[nodiscard]] core::Result<std::string> run_entry_output(
    const CommandEntry& entry, EnvironmentBase environment_base, const CommandContext& context,
    std::vector<kernels::GpuSample>* samples = nullptr);

// Whether a pytest parameter id ("4096-bf16") names the workload label of a run ("dtype_bf16-
// n_4096"): the same values, in any order.
[[nodiscard]] bool pytest_id_matches(std::string_view id, std::string_view workload);

// Why samples taken while the program ran make its runs inconclusive ("" when they do not):
// another compute process on the GPU, or an SM clock under 75% of its maximum while the GPU was
// busy (a sample whose clock event reasons say the GPU is idle is not a measurement of the run).
[[nodiscard]] std::string inconclusive_during(const std::vector<kernels::GpuSample>& samples);

}  // namespace kernelwatch::runners
