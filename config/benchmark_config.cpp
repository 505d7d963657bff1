// The `benchmarks` and `bench` sections: what the daemon runs, and the timing of its own kernels.
#include "config/detail/benchmark_config.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/catalogue.hpp"
#include "runners/command_config.hpp"
#include "runners/liger_bench_config.hpp"
#include "runners/liger_scripts_config.hpp"

namespace kernelwatch::config::detail {
namespace {

// A kernel, pass or provider name, parsed by core; the message lists the accepted names and
// quotes the text only when it cannot be a secret.
template <class Enum, std::size_t N>
Result<Enum> read_name(const JsonField& field, const std::string& text,
                       Result<Enum> (*parse)(std::string_view), const Enum (&values)[N]) {
  auto parsed = parse(text);
  if (!parsed) return field.error(shown(text) + " is not one of " + core::names_of(values));
  return parsed;
}

// The providers to run: both of kernelwatch's when the field is absent.
Result<std::vector<core::Provider>> read_providers(const JsonField& field) {
  std::vector<core::Provider> providers(std::begin(core::kProviders), std::end(core::kProviders));
  if (!field.present()) return providers;
  const auto items = KW_TRY(field.array());
  if (items.empty()) return field.error("lists no provider");
  providers.clear();
  for (const JsonField& item : items) {
    const std::string text = KW_TRY(item.string());
    const core::Provider provider =
        KW_TRY(read_name(item, text, core::parse_provider, core::kProviders));
    if (std::find(providers.begin(), providers.end(), provider) != providers.end()) {
      return item.error(shown(text) + " is listed twice");
    }
    providers.push_back(provider);
  }
  return providers;
}

// Workload labels, each of `kernel` (its descriptor's parser) and each passing `check` (a
// runner's own limits), if any.
Result<std::vector<core::Workload>> read_workloads(
    const JsonField& field, kernels::KernelRef kernel,
    const std::function<Status(const core::Workload&)>& check = {}) {
  const auto items = KW_TRY(field.array());
  if (items.empty()) return field.error("lists no workload");
  const std::string kernel_name(kernel.name());
  std::vector<core::Workload> workloads;
  for (const JsonField& item : items) {
    const std::string label = KW_TRY(item.string("a workload label"));
    core::Workload workload = KW_TRY(item.wrap(core::Workload::from_label(label)));
    if (!kernel->parse_workload(workload)) {
      for (const kernels::KernelDescriptor* other : kernels::catalogue()) {
        if (other->parse_workload(workload)) {
          return item.error(shown(label) + " is a " + std::string(other->name) +
                            " workload, not a " + kernel_name + " one");
        }
      }
      return item.error(shown(label) + " is not a " + kernel_name + " workload like \"" +
                        std::string(kernel->example_workload) + "\"");
    }
    for (const auto& earlier : workloads) {
      if (earlier.label() == workload.label()) return item.error(shown(label) + " is listed twice");
    }
    if (check) {
      if (auto ok = check(workload); !ok) return item.error(ok.error().message);
    }
    workloads.push_back(std::move(workload));
  }
  return workloads;
}

// A kernel of the catalogue (kernelwatch's own), or of core's names for liger-bench.
Result<kernels::KernelRef> read_kernel(const JsonField& field, Runner runner) {
  const std::string text = KW_TRY(field.string());
  if (runner == Runner::LigerBench) {
    return kernels::KernelRef(KW_TRY(read_name(field, text, core::parse_kernel, core::kKernels)));
  }
  auto kernel = kernels::find_kernel(text);
  if (!kernel) return field.error(shown(text) + " is not one of " + kernels::kernel_names());
  return *kernel;
}

// `runner`: absent for kernelwatch's own kernels, whose entries take none of a runner's fields.
Result<Runner> read_runner(const JsonField& object) {
  const JsonField field = object["runner"];
  if (!field.present()) {
    for (const std::string_view key : {"python", "script", "timeout"}) {
      if (object[key].present())
        return object[key].error("applies to a benchmark with a \"runner\"");
    }
    return Runner::Harness;
  }
  const std::string runner = KW_TRY(field.string());
  if (runner == runners::kCommandRunner) return Runner::Command;
  if (runner == runners::kLigerScriptsRunner) return Runner::LigerScripts;
  if (runner != runners::kLigerBenchRunner) {
    return field.error(shown(runner) +
                       " is not a known runner (known: " + std::string(runners::kLigerBenchRunner) +
                       ", " + std::string(runners::kLigerScriptsRunner) + ", " +
                       std::string(runners::kCommandRunner) +
                       "; leave it out for kernelwatch's own kernels)");
  }
  return Runner::LigerBench;
}

Status read_benchmark(const Reader& reader, const JsonField& field, BenchmarkConfig& out) {
  const JsonField entry = KW_TRY(field.object());
  if (entry["interval"].present()) {
    milliseconds interval{0};
    KW_TRY(read_duration(entry["interval"], std::chrono::seconds(1), interval));
    out.interval = interval;
  }
  const Runner runner = entry["runner"].present() ? KW_TRY(read_runner(entry)) : Runner::Harness;
  if (entry["gpus"].present() && runner != Runner::Command && runner != Runner::LigerBench) {
    return entry["gpus"].error(
        runner == Runner::Harness
            ? "applies to a benchmark with a \"runner\" (command, liger-bench); kernelwatch's own "
              "kernels run on the daemon's CUDA device (set CUDA_VISIBLE_DEVICES for the daemon)"
            : "applies to command and liger-bench entries; a liger-scripts entry runs where its "
              "scripts' own device choice puts it (set CUDA_VISIBLE_DEVICES in its env)");
  }
  out.gpus = KW_TRY(runners::read_gpu_selection(entry["gpus"]));
  // A runner reads its own fields; the config lends it durations, paths and how it quotes values.
  runners::EntryReaderServices services;
  services.duration = [](const JsonField& f, milliseconds minimum) -> Result<milliseconds> {
    milliseconds value{0};
    KW_TRY(read_duration(f, minimum, value));
    return value;
  };
  services.resolve = [&reader](const std::string& path) { return reader.resolve(path); };
  services.shown = [](std::string_view text) { return shown(text); };
  if (runner == Runner::Command || runner == Runner::LigerScripts) {
    out.runner = runner;
    if (runner == Runner::Command) {
      out.command = KW_TRY(runners::read_command_entry(entry, services));
      const bool pinned =
          std::any_of(out.command.env.begin(), out.command.env.end(),
                      [](const auto& v) { return v.first == "CUDA_VISIBLE_DEVICES"; });
      if (pinned && out.gpus.given) {
        return entry["gpus"].error(
            "and env.CUDA_VISIBLE_DEVICES both choose GPUs: keep one (gpus runs one process per "
            "GPU, each with its own CUDA_VISIBLE_DEVICES)");
      }
    } else {
      out.liger_scripts = KW_TRY(runners::read_liger_scripts_entry(entry, services));
    }
    return {};
  }
  const JsonField object =
      KW_TRY(object_of(field, {"runner", "kernel", "pass", "providers", "workloads", "python",
                               "script", "timeout", "interval", "gpus"}));
  for (const std::string_view key : {"kernel", "pass", "workloads"}) {
    if (!object[key].present()) return object.error(std::string(key) + " is missing");
  }
  out.runner = KW_TRY(read_runner(object));
  out.kernel = KW_TRY(read_kernel(object["kernel"], out.runner));
  const std::string pass = KW_TRY(object["pass"].string());
  out.pass = KW_TRY(read_name(object["pass"], pass, core::parse_pass, core::kPasses));
  if (out.runner == Runner::LigerBench) {
    const core::Kernel liger_kernel = KW_TRY(core::parse_kernel(out.kernel.name()));
    auto settings = KW_TRY(runners::read_liger_bench_entry(object, liger_kernel, services));
    out.liger_providers = std::move(settings.providers);
    out.liger = std::move(settings.options);
    // Each workload must be one liger-bench runs for every provider listed.
    const auto runs_everywhere = [&](const core::Workload& workload) -> Status {
      return runners::check_liger_workload(liger_kernel, out.pass, out.liger_providers, workload);
    };
    out.workloads = KW_TRY(read_workloads(object["workloads"], out.kernel, runs_everywhere));
  } else {
    out.providers = KW_TRY(read_providers(object["providers"]));
    out.workloads = KW_TRY(read_workloads(object["workloads"], out.kernel));
  }
  return {};
}

}  // namespace

Status read_benchmarks(const Reader& reader, const JsonField& field,
                       std::vector<BenchmarkConfig>& out) {
  const auto items = KW_TRY(field.array());
  for (std::size_t i = 0; i < items.size(); ++i) {
    BenchmarkConfig benchmark;
    KW_TRY(read_benchmark(reader, items[i], benchmark));
    // A command or liger-scripts entry is known by its name (in the schedule, the status).
    const auto name_of = [](const BenchmarkConfig& b) -> const std::string* {
      if (b.runner == Runner::Command) return &b.command.name;
      if (b.runner == Runner::LigerScripts) return &b.liger_scripts.name;
      return nullptr;
    };
    for (std::size_t j = 0; j < out.size(); ++j) {
      const std::string* name = name_of(benchmark);
      const std::string* other = name_of(out[j]);
      if (name != nullptr || other != nullptr) {
        if (name != nullptr && other != nullptr && *name == *other) {
          return items[i]["name"].error(shown(*name) + " is already the name of " +
                                        items[j].path());
        }
        continue;
      }
      if (out[j].runner == benchmark.runner && out[j].kernel == benchmark.kernel &&
          out[j].pass == benchmark.pass) {
        return items[i].error(std::string(benchmark.kernel.name()) + "/" +
                              std::string(core::to_string(benchmark.pass)) +
                              " is already listed in " + items[j].path());
      }
    }
    out.push_back(std::move(benchmark));
  }
  return {};
}

Status read_bench(const JsonField& field, kernels::TimingPolicy& out) {
  const JsonField object = KW_TRY(object_of(field, {"warmup", "repetitions"}));
  KW_TRY(read_duration(object["warmup"], milliseconds(0), out.warmup));
  KW_TRY(read_duration(object["repetitions"], milliseconds(1), out.repetitions));
  return {};
}
}  // namespace kernelwatch::config::detail
