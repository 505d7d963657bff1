// The CSV Liger-Kernel's benchmark scripts write (benchmark/data/all_benchmark_data.csv, through
// utils.update_benchmark_data_csv): kernel_name, kernel_provider, metric_name, metric_unit,
// gpu_name, x_name, x_label, x_value, y_value_50, y_value_20, y_value_80,
// extra_benchmark_config_str, kernel_operation_mode, timestamp, liger_version. Read through the
// importer's own mapping (runners/liger_csv.hpp), so a row's provider and workload are the ones
// its imported history has; speed rows are runs, memory rows are not.
#include "core/key.hpp"
#include "runners/child_process.hpp"
#include "runners/formats.hpp"
#include "runners/liger_csv.hpp"

namespace kernelwatch::runners {

core::Result<ParsedOutput> parse_liger_csv_output(std::string_view text) {
  auto items = read_liger_csv(text, "output");
  if (!items) {
    return core::fail(core::ErrorCode::ParseError, "not Liger-Kernel benchmark CSV: " +
                                                       readable_line(items.error().message, 300));
  }
  ParsedOutput out;
  out.timer = "cuda_events";
  for (const auto& item : *items) {
    if (item.kind == storage::ItemKind::Skipped) {
      ++out.skipped;
      continue;
    }
    if (item.kind == storage::ItemKind::Invalid) {
      return core::fail(core::ErrorCode::ParseError, "Liger-Kernel benchmark CSV: line " +
                                                         std::to_string(item.line) + ": " +
                                                         readable_line(item.reason, 300));
    }
    const core::Record& record = item.record;
    auto key = core::key_of(record);
    if (!key) {
      return core::fail(core::ErrorCode::ParseError, "Liger-Kernel benchmark CSV: line " +
                                                         std::to_string(item.line) + ": " +
                                                         readable_line(key.error().message, 300));
    }
    NativeResult r;
    r.name = key->benchmark.label;
    for (char& c : r.name) c = c == '/' ? '.' : c;
    r.provider = key->provider.label;
    r.workload = key->workload.label;
    r.primary_ns =
        static_cast<double>(record.run.median.value_or(std::chrono::nanoseconds{0}).count());
    for (const char* statistic : {"p20", "p80"}) {
      if (const auto v = record.run.latency(statistic)) {
        r.statistics.push_back({statistic, static_cast<double>(v->count())});
      }
    }
    r.device = record.environment.hardware.product;
    if (const auto v = record.run.metadata.labels.find("liger_version");
        v != record.run.metadata.labels.end()) {
      r.implementation_version = v->second;
    }
    check_times(r);
    out.results.push_back(std::move(r));
  }
  out.statistics_note =
      "Liger's y_value_50 (median), y_value_20 and y_value_80 (p20, p80) of "
      "triton.testing.do_bench "
      "in ms";
  return out;
}

}  // namespace kernelwatch::runners
