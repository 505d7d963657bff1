#include "runners/command.hpp"

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstring>
#include <fstream>
#include <system_error>

#include "core/digest.hpp"
#include "runners/child_process.hpp"
#include "runners/detail/command_record.hpp"
#include "runners/detail/scratch_dir.hpp"
#include "runners/gpus.hpp"

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;

// NVML's clocks event reason "GPU idle" (nvmlClocksEventReasonGpuIdle).
constexpr std::uint64_t kGpuIdle = 0x1;

constexpr std::array<std::string_view, 12> kTimingVariables = {"CUDA_LAUNCH_BLOCKING",
                                                               "CUDA_VISIBLE_DEVICES",
                                                               "CUDA_DEVICE_MAX_CONNECTIONS",
                                                               "CUDA_MODULE_LOADING",
                                                               "PYTORCH_NO_CUDA_MEMORY_CACHING",
                                                               "PYTORCH_CUDA_ALLOC_CONF",
                                                               "TRITON_INTERPRET",
                                                               "OMP_NUM_THREADS",
                                                               "MKL_NUM_THREADS",
                                                               "TORCH_COMPILE_DISABLE",
                                                               "NVIDIA_TF32_OVERRIDE",
                                                               "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"};
constexpr std::array<std::string_view, 7> kTimingVariablePrefixes = {
    "CUDA_", "PYTORCH_", "TORCH_", "TRITON_", "NCCL_", "CUBLAS_", "CUDNN_"};

std::string replace_out(std::string text, const std::string& path) {
  for (std::size_t at; (at = text.find(kOutPlaceholder)) != std::string::npos;) {
    text.replace(at, kOutPlaceholder.size(), path);
  }
  return text;
}

// At most `limit` bytes of a file; the error says why it cannot be read or is too large.
core::Result<std::string> read_output_file(const std::filesystem::path& path, std::size_t limit) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return core::fail(ErrorCode::NotFound,
                      "the output file " + path.filename().string() + " was not written");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return core::fail(ErrorCode::IoError, "cannot read the output file: " + ec.message());
  if (size > limit) {
    return core::fail(ErrorCode::InvalidArgument, "the output file is " + std::to_string(size) +
                                                      " bytes, over the limit of " +
                                                      std::to_string(limit));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in && !in.eof()) return core::fail(ErrorCode::IoError, "cannot read the output file");
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

// sha256 of the program a command runs, when it is a readable file of at most 512 MiB.
std::string program_digest(const std::string& program, const CommandEntry& entry) {
  std::filesystem::path path = program;
  if (program.find('/') == std::string::npos) {
    const char* env_path = std::getenv("PATH");
    std::string dirs = env_path != nullptr ? env_path : "/usr/bin:/bin";
    for (const auto& [name, value] : entry.env) {
      if (name == "PATH") dirs = value;
    }
    path.clear();
    for (std::size_t start = 0; start <= dirs.size();) {
      std::size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      const std::filesystem::path candidate =
          std::filesystem::path(dirs.substr(start, end - start)) / program;
      std::error_code ec;
      if (std::filesystem::is_regular_file(candidate, ec)) {
        path = candidate;
        break;
      }
      start = end + 1;
    }
  } else if (path.is_relative() && !entry.working_directory.empty()) {
    path = entry.working_directory / path;
  }
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return {};
  if (std::filesystem::file_size(path, ec) > (512U << 20) || ec) return {};
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return core::sha256_hex(bytes);
}

// The child of one execution of the entry: its argv with {out} replaced, its timeout, its env on
// top of `base` with the GPU's device variables last, its working directory, and its stdout kept
// whole unless it writes its output to a file.
ChildRequest entry_request(const CommandEntry& entry, const CommandContext& context,
                           const std::string& out_path, EnvironmentBase base) {
  ChildRequest request;
  for (const auto& arg : entry.command) request.argv.push_back(replace_out(arg, out_path));
  request.timeout = entry.timeout;
  request.kill_grace = entry.kill_grace;
  request.environment_base = base;
  request.environment = entry.env;
  for (const auto& variable : context.device_env) {
    std::erase_if(request.environment, [&](const auto& v) { return v.first == variable.first; });
    request.environment.push_back(variable);
  }
  request.working_directory = entry.working_directory;
  request.cancel_fd = context.cancel_fd;
  request.stdout_keep_bytes = entry.output != "stdout" ? 0 : entry.max_output_bytes;
  return request;
}

// Why an execution as a whole failed; "" when its output is to be parsed.
std::string execution_failure(const core::Result<ChildResult>& child, const CommandEntry& entry) {
  if (auto why = child_failure(child, "program", entry.command.front(), entry.timeout);
      !why.empty()) {
    return why;
  }
  if (child->stdout_overflow) {
    return "its output is over " + std::to_string(entry.max_output_bytes) + " bytes (" +
           std::to_string(child->stdout_bytes) + " bytes written): not parsed";
  }
  return {};
}

// pytest's verbosity over an argv: each -q lowers it, each -v raises it ("-qq", "--quiet").
int pytest_verbosity(const std::vector<std::string>& argv) {
  int verbosity = 0;
  for (const auto& arg : argv) {
    if (arg == "--quiet") --verbosity;
    if (arg == "--verbose") ++verbosity;
    if (arg.size() < 2 || arg[0] != '-' || arg[1] == '-') continue;
    const std::string_view letters = std::string_view(arg).substr(1);
    if (letters.find_first_not_of('q') == std::string_view::npos) {
      verbosity -= static_cast<int>(letters.size());
    } else if (letters.find_first_not_of('v') == std::string_view::npos) {
      verbosity += static_cast<int>(letters.size());
    }
  }
  return verbosity;
}

std::string_view trimmed(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  return line;
}

// The cases of a listing: Google Benchmark prints one name a line; pytest at verbosity -1 one
// node id a line ("tests/test_x.py::test_y[4096-bf16]") and then a summary.
std::vector<ListedCase> read_listing(const CommandEntry& entry, std::string_view text) {
  std::vector<ListedCase> out;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trimmed(text.substr(start, end - start));
    start = end + 1;
    if (line.empty() || line.starts_with("***")) continue;
    ListedCase c;
    if (entry.format == OutputFormat::GbenchJson) {
      const NativeResult r = gbench_case(std::string(line));
      c.benchmark = detail::benchmark_label(entry, r.name);
      c.workload = workload_label(r.params);
    } else {
      const std::size_t at = line.rfind("::");
      if (at == std::string_view::npos) continue;  // the summary, a warning
      const std::string_view name = line.substr(at + 2);
      const std::size_t open = name.find('[');
      c.benchmark = detail::benchmark_label(entry, std::string(name.substr(0, open)));
      // A test without parameters is the workload "default"; with them, only a run names them.
      c.workload = open == std::string_view::npos ? workload_label({}) : std::string();
    }
    c.provider = detail::provider_label(entry, "");
    c.case_id = readable_line(
        line.substr(line.rfind("::") == std::string_view::npos ? 0 : line.rfind("::") + 2), 200);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

bool can_list(OutputFormat format) noexcept {
  return format == OutputFormat::GbenchJson || format == OutputFormat::PytestBenchmarkJson;
}

core::Result<std::string> run_entry_output(const CommandEntry& entry,
                                           EnvironmentBase environment_base,
                                           const CommandContext& context,
                                           std::vector<kernels::GpuSample>* samples) {
  const bool to_file = entry.output != "stdout";
  auto scratch = detail::ScratchDir::create(context.scratch, entry.name, "a directory for {out}");
  if (!scratch) return tl::unexpected(scratch.error());
  const std::string out_path = (scratch->path() / "out").string();
  ChildRequest request = entry_request(entry, context, out_path, environment_base);
  int pid = 0;
  if (context.sampler && samples != nullptr) {
    request.on_spawn = [&](int spawned) {
      pid = spawned;
      samples->push_back(context.sampler(pid));
    };
    request.tick = context.sample_every;
    request.on_tick = [&] { samples->push_back(context.sampler(pid)); };
  }
  const auto child = run_child(request, {});
  if (const std::string failure = execution_failure(child, entry); !failure.empty()) {
    return core::fail(ErrorCode::Unavailable, failure);
  }
  if (to_file) return read_output_file(replace_out(entry.output, out_path), entry.max_output_bytes);
  return child->stdout_text;
}

core::Result<std::vector<ListedCase>> list_command(const CommandEntry& entry,
                                                   const CommandContext& context) {
  if (!can_list(entry.format)) {
    return core::fail(ErrorCode::InvalidArgument,
                      std::string(to_string(entry.format)) +
                          " output cannot list its cases without running them: run discover "
                          "without --list to see its keys");
  }
  auto scratch = detail::ScratchDir::create(context.scratch, entry.name, "a directory for {out}");
  if (!scratch) return tl::unexpected(scratch.error());
  const std::string out_path = (scratch->path() / "out").string();
  ChildRequest request;
  for (const auto& arg : entry.command) request.argv.push_back(replace_out(arg, out_path));
  if (entry.format == OutputFormat::GbenchJson) {
    request.argv.emplace_back("--benchmark_list_tests=true");
  } else {
    request.argv.emplace_back("--collect-only");
    // At verbosity -1 pytest prints each node id (-qq would print counts per file).
    for (int v = pytest_verbosity(request.argv); v != -1; v += v > -1 ? -1 : 1) {
      request.argv.emplace_back(v > -1 ? "-q" : "-v");
    }
  }
  request.timeout = entry.timeout;
  request.kill_grace = entry.kill_grace;
  request.environment_base = EnvironmentBase::Minimal;
  request.environment = entry.env;
  request.working_directory = entry.working_directory;
  request.cancel_fd = context.cancel_fd;
  request.stdout_keep_bytes = entry.max_output_bytes;
  const auto child = run_child(request, {});
  if (const std::string failure = execution_failure(child, entry); !failure.empty()) {
    return core::fail(ErrorCode::Unavailable, "listing its cases: " + failure);
  }
  std::vector<ListedCase> cases = read_listing(entry, child->stdout_text);
  if (cases.empty()) {
    return core::fail(ErrorCode::Unavailable, "listing its cases: the program listed none (" +
                                                  readable_line(trimmed(child->stdout_text), 200) +
                                                  ")");
  }
  return cases;
}

bool pytest_id_matches(std::string_view id, std::string_view workload) {
  const auto split = [](std::string_view text, char separator) {
    std::vector<std::string> parts;
    for (std::size_t start = 0; start <= text.size();) {
      std::size_t end = text.find(separator, start);
      if (end == std::string_view::npos) end = text.size();
      parts.emplace_back(text.substr(start, end - start));
      start = end + 1;
    }
    return parts;
  };
  const std::size_t open = id.find('[');
  if (open != std::string_view::npos) id = id.substr(open + 1, id.rfind(']') - open - 1);
  std::vector<std::string> values;
  for (const auto& part : split(id, '-')) {
    // The workload label's form of a value (runners/formats.cpp: lowercase, [a-z0-9.]).
    values.push_back(workload_label({{"x", part}}).substr(2));
  }
  std::vector<std::string> stored;
  for (const auto& pair : split(workload, '-')) {
    const std::size_t underscore = pair.find('_');
    if (underscore == std::string::npos) return false;
    stored.push_back(pair.substr(underscore + 1));
  }
  std::sort(values.begin(), values.end());
  std::sort(stored.begin(), stored.end());
  return values == stored;
}

bool changes_timing(std::string_view variable) {
  if (std::find(kTimingVariables.begin(), kTimingVariables.end(), variable) !=
      kTimingVariables.end()) {
    return true;
  }
  return std::any_of(kTimingVariablePrefixes.begin(), kTimingVariablePrefixes.end(),
                     [&](std::string_view prefix) { return variable.starts_with(prefix); });
}

std::string CommandEntry::command_line() const {
  std::string out;
  for (const auto& arg : command) {
    const bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    std::string quoted = plain ? arg : "'" + arg + "'";
    out += (out.empty() ? "" : " ") + quoted;
  }
  return out;
}

HostProbe system_host_probe() {
  auto nvml = std::make_shared<kernels::Nvml>();
  const auto cpu = std::make_shared<kernels::CpuInfo>(kernels::probe_cpu());
  return [nvml, cpu] {
    HostIdentity host;
    if (nvml->available()) {
      if (auto gpu = nvml->identity(0)) {
        host.gpu_name = gpu->name;
        host.hardware = core::hardware_from_gpu_name(gpu->name);
        if (gpu->compute_major > 0) {
          host.hardware.architecture =
              "sm_" + std::to_string(gpu->compute_major) + std::to_string(gpu->compute_minor);
        }
        host.memory_bytes = gpu->memory_bytes;
        host.driver = nvml->driver_version();
        host.placement.host = host_name();
        host.placement.gpu = "0";
        if (const auto all = nvml->devices(); !all.empty() && all.front().index == 0) {
          host.placement.gpu_uuid = all.front().uuid;
          host.placement.pci_bus_id = all.front().pci_bus_id;
        }
        return host;
      }
    }
    host.hardware = kernels::cpu_hardware(*cpu);
    host.memory_bytes = cpu->memory_bytes;
    host.placement.host = host_name();
    return host;
  };
}

std::string inconclusive_during(const std::vector<kernels::GpuSample>& samples) {
  unsigned highest = 0;
  unsigned maximum = 0;
  bool reasons_known = false;
  for (const auto& s : samples) {
    if (s.other_compute_processes && *s.other_compute_processes > 0) {
      return std::to_string(*s.other_compute_processes) +
             " other compute process(es) on the GPU while the program ran";
    }
    if (!s.sm_clock_mhz || !s.sm_clock_max_mhz || *s.sm_clock_max_mhz == 0) continue;
    if (s.clock_event_reasons) {
      reasons_known = true;
      if ((*s.clock_event_reasons & kGpuIdle) != 0) continue;  // not running a kernel
      if (*s.sm_clock_mhz * 4 < *s.sm_clock_max_mhz * 3) {
        char reasons[32];
        std::snprintf(reasons, sizeof reasons, "0x%llx",
                      static_cast<unsigned long long>(*s.clock_event_reasons));
        return "SM clock " + std::to_string(*s.sm_clock_mhz) + " MHz under 75% of its maximum " +
               std::to_string(*s.sm_clock_max_mhz) +
               " MHz while the GPU was busy (clock event "
               "reasons " +
               reasons + ")";
      }
      continue;
    }
    highest = std::max(highest, *s.sm_clock_mhz);
    maximum = *s.sm_clock_max_mhz;
  }
  // Without event reasons, an idle sample cannot be told apart: the run counts when the clock
  // was high at any sample while it ran.
  if (!reasons_known && maximum > 0 && highest * 4 < maximum * 3) {
    return "SM clock at most " + std::to_string(highest) +
           " MHz while the program ran, under 75% "
           "of its maximum " +
           std::to_string(maximum) + " MHz";
  }
  return {};
}

namespace {

// Reads an output the entry's program wrote in its declared format, parsed whole or not at all
// (a partial output is never judged), and appends its runs and keys to `out`. Returns why the
// output cannot be read ("" when it was).
std::string record_output(const CommandEntry& entry, detail::ExecutionFacts& facts,
                          const std::string& text, const HostIdentity& host, CommandOutcome& out) {
  std::string failure;
  std::vector<NativeResult> results;
  std::vector<core::Record> printed;
  if (entry.format == OutputFormat::KernelindexJsonl) {
    auto records = parse_kernelindex_lines(text);
    if (records) {
      printed = std::move(*records);
    } else {
      failure = "format mismatch (" + std::string(to_string(entry.format)) +
                "): " + records.error().message;
    }
  } else {
    auto parsed = parse_output(entry.format, text);
    if (!parsed) {
      failure = "format mismatch (" + std::string(to_string(entry.format)) +
                "): " + parsed.error().message;
    } else if (parsed->results.empty()) {
      failure = "the output has no result" +
                (parsed->skipped > 0 ? " (" + std::to_string(parsed->skipped) + " skipped)"
                                     : std::string());
    } else {
      facts.harness_version = parsed->harness_version;
      facts.timer = parsed->timer;
      facts.statistics_note = parsed->statistics_note;
      results = std::move(parsed->results);
    }
  }

  if (!failure.empty()) return failure;
  const std::string inconclusive = inconclusive_during(facts.samples);
  const auto verdict_of = [&](bool timed, std::string& reason) {
    if (!timed) return RunVerdict::Failed;
    if (!inconclusive.empty()) {
      reason = inconclusive;
      return RunVerdict::Inconclusive;
    }
    return RunVerdict::Passed;
  };
  for (auto& result : results) {
    // The program's own device claim against the daemon's probe.
    if (result.outcome == NativeResult::Outcome::Timed && !result.device.empty() &&
        core::hardware_from_gpu_name(result.device).product != host.hardware.product) {
      result.outcome = NativeResult::Outcome::Failed;
      result.failure = "the output says it ran on \"" + readable_line(result.device, 100) +
                       "\", the daemon probed \"" +
                       (host.gpu_name.empty() ? host.hardware.product : host.gpu_name) + "\"";
    }
    std::string reason = result.failure;
    const RunVerdict verdict = verdict_of(result.outcome == NativeResult::Outcome::Timed, reason);
    KnownKey key;
    auto run = detail::result_run(facts, result, verdict, reason, key);
    if (!run) {
      NativeResult failed = result;
      failed.outcome = NativeResult::Outcome::Failed;
      run = detail::result_run(facts, failed, RunVerdict::Failed,
                               "result not recordable: " + run.error().message, key);
    }
    if (!run) continue;  // a name no key can hold: said in the outcome's error below
    out.runs.push_back(std::move(*run));
    out.keys.push_back(std::move(key));
  }
  for (const auto& record : printed) {
    std::string reason;
    const RunVerdict verdict =
        core::is_failure(record.run.status) ? RunVerdict::Failed : verdict_of(true, reason);
    KnownKey key;
    auto run = detail::printed_run(facts, record, verdict, reason, key);
    if (!run) {
      out.error = "a printed record is not recordable: " + run.error().message;
      continue;
    }
    out.runs.push_back(std::move(*run));
    out.keys.push_back(std::move(key));
  }
  return {};
}

CommandOutcome execute(const CommandEntry& entry, const CommandContext& context,
                       const std::vector<KnownKey>& known, const HostIdentity& host) {
  CommandOutcome out;
  detail::ExecutionFacts facts;
  facts.entry = &entry;
  facts.host = &host;

  // {out}: a fresh path in a fresh private directory, made only when the entry uses it.
  const bool to_file = entry.output != "stdout";
  const bool uses_out =
      to_file || std::any_of(entry.command.begin(), entry.command.end(), [](const auto& a) {
        return a.find(kOutPlaceholder) != std::string::npos;
      });
  std::optional<detail::ScratchDir> scratch;
  std::string failure;
  if (uses_out) {
    auto made = detail::ScratchDir::create(context.scratch, entry.name, "a directory for {out}");
    if (made) {
      scratch.emplace(std::move(*made));
    } else {
      failure = made.error().message;
    }
  }
  const std::string out_path = scratch ? (scratch->path() / "out").string() : std::string();
  std::optional<core::Result<ChildResult>> child;
  std::string text;
  if (failure.empty()) {
    ChildRequest request = entry_request(entry, context, out_path, EnvironmentBase::Minimal);
    int pid = 0;
    request.on_spawn = [&](int spawned) {
      pid = spawned;
      if (context.sampler) facts.samples.push_back(context.sampler(pid));
    };
    if (context.sampler) {
      request.tick = context.sample_every;
      request.on_tick = [&] { facts.samples.push_back(context.sampler(pid)); };
    }
    facts.program_digest = program_digest(request.argv.front(), entry);
    child = run_child(request, {});
    failure = execution_failure(*child, entry);
    if (*child && (*child)->end == ChildEnd::Cancelled) {
      out.cancelled = true;
      return out;
    }
    if (failure.empty()) {
      if (to_file) {
        auto read = read_output_file(replace_out(entry.output, out_path), entry.max_output_bytes);
        if (read) {
          text = std::move(*read);
        } else {
          failure = read.error().message;
        }
      } else {
        text = std::move((*child)->stdout_text);
      }
    }
  }
  facts.observed = context.now();

  if (failure.empty()) failure = record_output(entry, facts, text, host, out);
  if (!failure.empty()) {
    out.error = readable_line(failure, kMaxReasonBytes);
    const RunVerdict verdict =
        *child && (**child).end == ChildEnd::TimedOut ? RunVerdict::TimedOut : RunVerdict::Failed;
    std::vector<KnownKey> keys = known;
    if (keys.empty()) {
      KnownKey fallback;
      fallback.benchmark = entry.name + "/command";
      fallback.provider = entry.provider.empty() ? entry.name : entry.provider;
      fallback.workload = "default";
      fallback.protocol = detail::failed_protocol(facts);
      keys.push_back(std::move(fallback));
    }
    for (const auto& key : keys) {
      auto run = detail::failed_run(facts, key, verdict, out.error);
      KW_ASSERT(static_cast<bool>(run), "a failed command run always maps to a record");
      out.runs.push_back(std::move(*run));
    }
    out.keys = known;
    return out;
  }

  return out;
}

}  // namespace

CommandOutcome run_command(const CommandEntry& entry, const CommandContext& context,
                           const std::vector<KnownKey>& known) {
  KW_ASSERT(!entry.command.empty() && context.probe && context.now, "a command and its context");
  const HostIdentity host = context.probe();
  CommandOutcome out = execute(entry, context, known, host);
  // Every run, failed ones included, is on the host and GPU the daemon probed for it.
  for (auto& run : out.runs) core::set_placement(run.run.metadata, host.placement);
  return out;
}

core::Result<std::vector<core::Record>> runs_from_output(const CommandEntry& entry,
                                                         const std::string& text,
                                                         const HostIdentity& host,
                                                         core::Timestamp observed) {
  detail::ExecutionFacts facts;
  facts.entry = &entry;
  facts.host = &host;
  facts.observed = observed;
  if (!entry.command.empty()) facts.program_digest = program_digest(entry.command.front(), entry);
  CommandOutcome out;
  if (const std::string failure = record_output(entry, facts, text, host, out); !failure.empty()) {
    return core::fail(ErrorCode::ParseError, readable_line(failure, kMaxReasonBytes));
  }
  if (!out.error.empty()) return core::fail(ErrorCode::ParseError, out.error);
  for (auto& run : out.runs) core::set_placement(run.run.metadata, host.placement);
  return std::move(out.runs);
}

}  // namespace kernelwatch::runners
