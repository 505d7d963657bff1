// The `benchmarks` and `bench` sections: what the daemon runs, and the timing of its own kernels.
#include "config/detail/benchmark_config.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/catalogue.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"

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
    // Its runs carry the label the kernel writes for its shape, which must read back as a label
    // (an eps of 1e6 would be written "eps1e+06", which no label may hold).
    if (const auto spec = kernels::CaseSpec::from_workload(kernel, workload)) {
      const std::string written = kernels::workload_of(kernel, *spec).label();
      if (const auto back = core::Workload::from_label(written); !back) {
        return item.error(shown(label) + " would be recorded as " + shown(written) + ": " +
                          back.error().message);
      }
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

// A kernel of the catalogue.
Result<kernels::KernelRef> read_kernel(const JsonField& field) {
  const std::string text = KW_TRY(field.string());
  auto kernel = kernels::find_kernel(text);
  if (!kernel) return field.error(shown(text) + " is not one of " + kernels::kernel_names());
  return *kernel;
}

// What the config lends a run source's reader (runners/source_entry.hpp).
runners::EntryReaderServices reader_services(const Reader& reader) {
  runners::EntryReaderServices services;
  services.duration = [](const JsonField& f, milliseconds minimum) -> Result<milliseconds> {
    milliseconds value{0};
    KW_TRY(read_duration(f, minimum, value));
    return value;
  };
  services.resolve = [&reader](const std::string& path) { return reader.resolve(path); };
  services.shown = [](std::string_view text) { return shown(text); };
  services.known_fields = [](const JsonField& object,
                             const std::vector<std::string_view>& allowed) -> Status {
    KW_TRY(object_of(object, allowed));
    return {};
  };
  services.workloads = [](const JsonField& f, kernels::KernelRef kernel,
                          const std::function<Status(const core::Workload&)>& check) {
    return read_workloads(f, kernel, check);
  };
  return services;
}

// `runner`: the run source that reads the entry; nullptr for kernelwatch's own kernels (none).
Result<const runners::RunSource*> read_runner(const Reader& reader, const JsonField& object) {
  const JsonField field = object["runner"];
  if (!field.present()) return nullptr;
  const std::string runner = KW_TRY(field.string());
  const runners::RunSource* source = reader.sources().find_runner(runner);
  if (source == nullptr) {
    return field.error(shown(runner) + " is not a known runner (known: " +
                       runners::join_names(reader.sources().runners(), ", ") +
                       "; leave it out for kernelwatch's own kernels)");
  }
  return source;
}

Status read_benchmark(const Reader& reader, const JsonField& field, BenchmarkConfig& out) {
  const JsonField entry = KW_TRY(field.object());
  if (entry["interval"].present()) {
    milliseconds interval{0};
    KW_TRY(read_duration(entry["interval"], std::chrono::seconds(1), interval));
    out.interval = interval;
  }
  const runners::RunSource* source = KW_TRY(read_runner(reader, entry));
  if (entry["gpus"].present() && source != nullptr && !source->gpus) {
    const auto with_gpus = reader.sources().runners(/*gpus_only=*/true);
    return entry["gpus"].error("applies to kernelwatch's own kernels and to " +
                               runners::join_names(with_gpus, ", ", " and ") + " entries; " +
                               std::string(source->no_gpus));
  }
  if (source != nullptr) {
    // A runner reads its own fields; the config lends it durations, paths, how it quotes values
    // and how workloads are read.
    out.source = KW_TRY(source->read(entry, reader_services(reader)));
    return {};
  }
  const JsonField object =
      KW_TRY(object_of(field, {"runner", "kernel", "pass", "providers", "workloads", "python",
                               "script", "timeout", "interval", "gpus"}));
  for (const std::string_view key : {"kernel", "pass", "workloads"}) {
    if (!object[key].present()) return object.error(std::string(key) + " is missing");
  }
  // kernelwatch's own kernels take none of a runner's fields.
  for (const std::string_view key : {"python", "script", "timeout"}) {
    if (object[key].present()) return object[key].error("applies to a benchmark with a \"runner\"");
  }
  out.kernel = KW_TRY(read_kernel(object["kernel"]));
  const std::string pass = KW_TRY(object["pass"].string());
  out.pass = KW_TRY(read_name(object["pass"], pass, core::parse_pass, core::kPasses));
  out.providers = KW_TRY(read_providers(object["providers"]));
  out.workloads = KW_TRY(read_workloads(object["workloads"], out.kernel));
  out.gpus = KW_TRY(runners::read_gpu_selection(object["gpus"]));
  return {};
}

}  // namespace

Status read_benchmarks(const Reader& reader, const JsonField& field,
                       std::vector<BenchmarkConfig>& out) {
  const auto items = KW_TRY(field.array());
  for (std::size_t i = 0; i < items.size(); ++i) {
    BenchmarkConfig benchmark;
    KW_TRY(read_benchmark(reader, items[i], benchmark));
    // Every entry is known by its name (in the schedule, the status): no two share one.
    const std::string name = benchmark.name();
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].name() != name) continue;
      if (benchmark.source) {
        return benchmark.source->name_taken(items[i], items[j].path(), reader_services(reader));
      }
      return items[i].error(name + " is already listed in " + items[j].path());
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

namespace kernelwatch::config {

std::string BenchmarkConfig::name() const {
  if (source) return source->name();
  return std::string(kernel.name()) + "/" + std::string(core::to_string(pass));
}

}  // namespace kernelwatch::config
