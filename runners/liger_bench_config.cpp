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
                                                        core::Kernel kernel,
                                                        const EntryReaderServices& services) {
  const JsonField field = object["providers"];
  const std::string kernel_name(core::to_string(kernel));
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
                                                        core::Kernel kernel,
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

core::Status check_liger_workload(core::Kernel kernel, core::Pass pass,
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
  return {{"providers", std::move(names)},
          {"runner", kLigerBenchRunner},
          {"python", options.python.string()},
          {"script", options.script.string()}};
}

}  // namespace kernelwatch::runners
