#include "runners/harness_config.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "kernels/catalogue.hpp"
#include "runners/harness_child.hpp"
#include "runners/producer.hpp"

namespace kernelwatch::runners {

using core::JsonField;

namespace {

// The providers to run: both of kernelwatch's when the field is absent.
core::Result<std::vector<core::Provider>> read_providers(const JsonField& field,
                                                         const EntryReaderServices& services) {
  std::vector<core::Provider> providers(std::begin(core::kProviders), std::end(core::kProviders));
  if (!field.present()) return providers;
  const auto items = KW_TRY(field.array());
  if (items.empty()) return field.error("lists no provider");
  providers.clear();
  for (const JsonField& item : items) {
    const std::string text = KW_TRY(item.string());
    const auto provider = core::parse_provider(text);
    if (!provider) {
      return item.error(services.shown(text) + " is not one of " +
                        core::names_of(core::kProviders));
    }
    if (std::find(providers.begin(), providers.end(), *provider) != providers.end()) {
      return item.error(services.shown(text) + " is listed twice");
    }
    providers.push_back(*provider);
  }
  return providers;
}

// A kernel of the catalogue; the message lists them.
core::Result<kernels::KernelRef> read_kernel(const JsonField& field,
                                             const EntryReaderServices& services) {
  const std::string text = KW_TRY(field.string());
  auto kernel = kernels::find_kernel(text);
  if (!kernel)
    return field.error(services.shown(text) + " is not one of " + kernels::kernel_names());
  return *kernel;
}

}  // namespace

core::Result<std::shared_ptr<const SourceEntry>> read_harness_source(
    const JsonField& object, const EntryReaderServices& services) {
  KW_TRY(services.known_fields(object, {"runner", "kernel", "pass", "providers", "workloads",
                                        "python", "script", "timeout", "interval", "gpus"}));
  for (const std::string_view key : {"kernel", "pass", "workloads"}) {
    if (!object[key].present()) return object.error(std::string(key) + " is missing");
  }
  // kernelwatch's own kernels take none of a runner's fields.
  for (const std::string_view key : {"python", "script", "timeout"}) {
    if (object[key].present()) return object[key].error("applies to a benchmark with a \"runner\"");
  }
  auto out = std::make_shared<HarnessSource>();
  out->kernel = KW_TRY(read_kernel(object["kernel"], services));
  out->pass = KW_TRY(read_pass(object["pass"], services));
  out->providers = KW_TRY(read_providers(object["providers"], services));
  out->workloads = KW_TRY(services.workloads(object["workloads"], out->kernel, {}));
  out->gpus = KW_TRY(read_gpu_selection(object["gpus"]));
  return std::shared_ptr<const SourceEntry>(std::move(out));
}

std::string HarnessSource::name() const {
  return std::string(kernel.name()) + "/" + std::string(core::to_string(pass));
}

core::Status HarnessSource::name_taken(const JsonField& object, const std::string& earlier,
                                       const EntryReaderServices& services) const {
  (void)services;
  return object.error(name() + " is already listed in " + earlier);
}

nlohmann::json HarnessSource::to_json(const DurationText& duration) const {
  (void)duration;
  nlohmann::json names = nlohmann::json::array();
  for (const auto provider : providers) names.push_back(core::to_string(provider));
  nlohmann::json labels = nlohmann::json::array();
  for (const auto& workload : workloads) labels.push_back(workload.label());
  nlohmann::json out = {{"providers", std::move(names)},
                        {"kernel", std::string(kernel.name())},
                        {"pass", core::to_string(pass)},
                        {"workloads", std::move(labels)}};
  if (gpus.given) out["gpus"] = gpu_selection_json(gpus);
  return out;
}

std::vector<std::shared_ptr<RunProducer>> HarnessSource::producers(CycleHost& host) const {
  const RunnerServices& services = host.services();
  HarnessEntry entry{kernel,
                     pass,
                     providers,
                     {},
                     services.harness.backend,
                     services.harness.policy,
                     services.harness.seed};
  for (const auto& workload : workloads) {
    auto spec = kernels::CaseSpec::from_workload(kernel, workload);
    if (spec) entry.shapes.push_back(*spec);  // validated when the entry was read
  }
  // Each case in this process, or on each GPU the entry runs on (runners/harness_child.hpp).
  HarnessChildOptions child;
  child.cancel_fd = services.cancel_fd;
  std::vector<std::shared_ptr<RunProducer>> out;
  for (auto& request : harness_cases(entry)) {
    out.push_back(harness_producer(host, gpus, std::move(request), services.harness_host, child));
  }
  return out;
}

std::optional<std::string> HarnessSource::not_discovered() const {
  return "is one of kernelwatch's own kernels: its keys are its config's cases (kernelwatch bench "
         "runs one)";
}

}  // namespace kernelwatch::runners
