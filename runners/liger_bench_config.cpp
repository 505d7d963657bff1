#include "runners/liger_bench_config.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#include "runners/producer.hpp"

namespace kernelwatch::runners {

using core::JsonField;

namespace {

// The providers: required, each one liger-bench runs for the kernel, none twice.
core::Result<std::vector<LigerProvider>> read_providers(const JsonField& object,
                                                        kernels::KernelRef kernel,
                                                        const EntryReaderServices& services) {
  const JsonField field = object["providers"];
  const std::string kernel_name(kernel.name());
  if (!field.present()) {
    return object.error("providers is missing (liger-bench runs " + providers_of(kernel) + " for " +
                        kernel_name + ")");
  }
  const auto items = KW_TRY(field.array());
  if (items.empty()) return field.error("lists no provider");
  std::vector<LigerProvider> providers;
  for (const JsonField& item : items) {
    const std::string text = KW_TRY(item.string());
    const auto provider = parse_liger_provider(text);
    if (!provider || !supports(kernel, *provider)) {
      return item.error(services.shown(text) + " is not a provider liger-bench runs for " +
                        kernel_name + " (" + providers_of(kernel) + ")");
    }
    if (std::find(providers.begin(), providers.end(), *provider) != providers.end()) {
      return item.error(services.shown(text) + " is listed twice");
    }
    providers.push_back(*provider);
  }
  return providers;
}

}  // namespace

core::Result<LigerBenchSettings> read_liger_bench_entry(const JsonField& object,
                                                        kernels::KernelRef kernel,
                                                        const EntryReaderServices& services) {
  LigerBenchSettings out;
  out.providers = KW_TRY(read_providers(object, kernel, services));
  const JsonField python_field = object["python"];
  if (!python_field.present()) {
    return object.error(
        "python is missing (the interpreter of a venv with torch, triton and liger-kernel, like "
        "\"/opt/venv/bin/python3\")");
  }
  const std::string python = KW_TRY(python_field.string());
  if (python.empty()) return python_field.error("is empty");
  // A bare name is looked up in PATH when the runner starts; a path is taken relative to the
  // config file. A missing interpreter is a failed run, not a config error (venvs come and go).
  out.options.python = python.find('/') == std::string::npos ? std::filesystem::path(python)
                                                             : services.resolve(python);
  const JsonField script_field = object["script"];
  if (script_field.present()) {
    out.options.script = services.resolve(KW_TRY(script_field.string()));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(out.options.script, ec)) {
      return script_field.error("\"" + out.options.script.string() + "\" is not a file");
    }
  }
  if (object["timeout"].present()) {
    out.options.timeout = KW_TRY(services.duration(object["timeout"], std::chrono::seconds(1)));
  }
  return out;
}

core::Status check_liger_workload(kernels::KernelRef kernel, core::Pass pass,
                                  const std::vector<LigerProvider>& providers,
                                  const core::Workload& workload) {
  for (const LigerCase& c : liger_cases({kernel, pass, providers, {workload}})) {
    KW_TRY(validate(c));
  }
  return {};
}

nlohmann::json liger_bench_entry_json(const std::vector<LigerProvider>& providers,
                                      const LigerBenchOptions& options) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto provider : providers) names.push_back(to_string(provider));
  nlohmann::json out = {{"providers", std::move(names)},
                        {"runner", kLigerBenchRunner},
                        {"python", options.python.string()}};
  // No `script`: the one built in, which the field's absence says (an empty path is not a file).
  if (!options.script.empty()) out["script"] = options.script.string();
  return out;
}

}  // namespace kernelwatch::runners

namespace kernelwatch::runners {
namespace {

// One of the kernels liger-bench runs; the message lists them.
core::Result<kernels::KernelRef> read_kernel(const JsonField& field,
                                             const EntryReaderServices& services) {
  const std::string text = KW_TRY(field.string());
  auto parsed = parse_liger_bench_kernel(text);
  if (!parsed)
    return field.error(services.shown(text) + " is not one of " + liger_bench_kernel_names());
  return parsed;
}

}  // namespace

core::Result<std::shared_ptr<const SourceEntry>> read_liger_bench_source(
    const JsonField& object, const EntryReaderServices& services) {
  auto out = std::make_shared<LigerBenchSource>();
  out->gpus = KW_TRY(read_gpu_selection(object["gpus"]));
  KW_TRY(services.known_fields(object, {"runner", "kernel", "pass", "providers", "workloads",
                                        "python", "script", "timeout", "interval", "gpus"}));
  for (const std::string_view key : {"kernel", "pass", "workloads"}) {
    if (!object[key].present()) return object.error(std::string(key) + " is missing");
  }
  out->kernel = KW_TRY(read_kernel(object["kernel"], services));
  out->pass = KW_TRY(read_pass(object["pass"], services));
  auto settings = KW_TRY(read_liger_bench_entry(object, out->kernel, services));
  out->providers = std::move(settings.providers);
  out->options = std::move(settings.options);
  // Each workload must be one liger-bench runs for every provider listed.
  const auto runs_everywhere = [&](const core::Workload& workload) -> core::Status {
    return check_liger_workload(out->kernel, out->pass, out->providers, workload);
  };
  out->workloads = KW_TRY(services.workloads(object["workloads"], out->kernel, runs_everywhere));
  return std::shared_ptr<const SourceEntry>(std::move(out));
}

std::string LigerBenchSource::name() const {
  return std::string(kLigerBenchRunner) + " " + std::string(kernel.name()) + "/" +
         std::string(core::to_string(pass));
}

core::Status LigerBenchSource::name_taken(const JsonField& object, const std::string& earlier,
                                          const EntryReaderServices& services) const {
  (void)services;
  return object.error(std::string(kernel.name()) + "/" + std::string(core::to_string(pass)) +
                      " is already listed in " + earlier);
}

nlohmann::json LigerBenchSource::to_json(const DurationText& duration) const {
  nlohmann::json out = liger_bench_entry_json(providers, options);
  out["timeout"] = duration(options.timeout);
  out["gpus"] = gpu_selection_json(gpus);
  nlohmann::json labels = nlohmann::json::array();
  for (const auto& workload : workloads) labels.push_back(workload.label());
  out["kernel"] = std::string(kernel.name());
  out["pass"] = core::to_string(pass);
  out["workloads"] = std::move(labels);
  return out;
}

std::vector<std::shared_ptr<RunProducer>> LigerBenchSource::producers(CycleHost& host) const {
  auto selected = host.select(gpus, options.environment);
  if (!selected) return {std::make_shared<FailingProducer>(name(), selected.error().message)};
  const RunnerServices& services = host.services();
  std::vector<std::shared_ptr<RunProducer>> out;
  for (const auto& liger_case : liger_cases({kernel, pass, providers, workloads})) {
    out.push_back(host.per_gpu(
        liger_case.name(), *selected,
        [&](const GpuDevice* gpu, HostIdentity on) -> std::shared_ptr<RunProducer> {
          LigerBenchOptions run = options;
          run.sampler = gpu != nullptr && services.device_sampler ? services.device_sampler(*gpu)
                                                                  : services.sampler;
          run.cancel_fd = services.cancel_fd;
          run.placement = on.placement;
          // A run that fails before the runner named its GPU is on the GPU probed here.
          if (!on.gpu_name.empty()) run.fallback_gpu_name = on.gpu_name;
          if (gpu != nullptr)
            run.environment.emplace_back("CUDA_VISIBLE_DEVICES", gpu->visible_id());
          return std::make_shared<LigerBenchProducer>(std::move(run), liger_case);
        }));
  }
  return out;
}

}  // namespace kernelwatch::runners
