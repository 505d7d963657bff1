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

// `runner`: the run source that reads the entry; absent, kernelwatch's own kernels.
Result<const runners::RunSource*> read_runner(const Reader& reader, const JsonField& object) {
  const JsonField field = object["runner"];
  if (!field.present()) {
    const runners::RunSource* own = reader.sources().find_runner("");
    if (own == nullptr) {
      return object.error("runner is missing (known: " +
                          runners::join_names(reader.sources().runners(), ", ") + ")");
    }
    return own;
  }
  const std::string runner = KW_TRY(field.string());
  const runners::RunSource* source =
      runner.empty() ? nullptr : reader.sources().find_runner(runner);
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
  if (entry["gpus"].present() && !source->gpus) {
    const auto with_gpus = reader.sources().runners(/*gpus_only=*/true);
    return entry["gpus"].error("applies to kernelwatch's own kernels and to " +
                               runners::join_names(with_gpus, ", ", " and ") + " entries; " +
                               std::string(source->no_gpus));
  }
  // Each source reads its own fields; the config lends it durations, paths, how it quotes values
  // and how workloads are read.
  out.source = KW_TRY(source->read(entry, reader_services(reader)));
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
      return benchmark.source->name_taken(items[i], items[j].path(), reader_services(reader));
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
  return source->name();
}

}  // namespace kernelwatch::config
