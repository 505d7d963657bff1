// Reads Liger-Kernel benchmark CSV (all_benchmark_data.csv and the weekly CI files) into
// kernelindex records shaped like the founding fixtures. Speed rows become runs; memory rows are
// skipped and counted. Columns it does not know are ignored. The import of a Liger CSV
// (runners/liger_import.hpp), liger-bench and liger-scripts all read rows here, so a row lands in
// one key whichever way it came. Uses nlohmann/json and storage's neutral types, no SQLite.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/key.hpp"
#include "core/record.hpp"
#include "core/time.hpp"
#include "runners/csv.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::runners {

// What a valid speed row of Liger's CSV says. The importer builds it from a CSV row; the
// liger-bench runner builds it from a rerun's result, so both land in one key.
struct LigerSpeedRow {
  std::string kernel;    // kernel_name: tvd, layer_norm
  std::string pass;      // kernel_operation_mode: forward, backward, full
  std::string provider;  // kernel_provider: liger, torch, huggingface, ...
  std::string version;   // liger_version
  core::Workload workload;
  std::array<double, 3> ms{};  // y_value_20, y_value_50, y_value_80
  core::Timestamp observed{};
  core::Hardware hardware;  // core::hardware_from_gpu_name(gpu_name)
};

// The workload of a row from kernel_name, x_name, x_value and extra_benchmark_config_str: for
// TVD (x V) and LayerNorm (x N) kernelwatch's own workload (tokens = B*T, rows = M), for any other
// kernel a generic label. ParseError names the column that is wrong.
[[nodiscard]] core::Result<core::Workload> liger_workload(std::string_view kernel,
                                                          std::string_view x_name,
                                                          const std::string& x_value,
                                                          const std::string& config_text);

// The kernelindex record of a speed row, shaped like the founding fixtures: benchmark
// <kernel>/<pass>, protocol liger-bench-do-bench-<pass>, the GPU's environment, source
// "liger-kernel-bench", label liger_version.
[[nodiscard]] core::Result<core::Record> liger_speed_record(const LigerSpeedRow& row);
// The same record as its documents ({run, protocol, environment}), each checked against the
// public schemas, before parsing: the runners that rerun Liger's benchmarks add what they know
// of the run to them and parse the record once.
[[nodiscard]] core::Result<nlohmann::json> liger_speed_documents(const LigerSpeedRow& row);

// A Liger run's implementationDigest: ours over provider, version and source (no document of
// that kind stands behind it).
[[nodiscard]] std::string liger_implementation_digest(std::string_view provider,
                                                      std::string_view version);

// One data row of a Liger CSV as what it says: a speed row (kind Run, `row` set), a memory row
// (Skipped) or an invalid row, with the reason. The liger-scripts runner reads the rows a script
// wrote this way, so each lands in the key the importer gives the same row.
struct LigerRowItem {
  std::size_t line = 0;
  storage::ItemKind kind = storage::ItemKind::Run;
  std::string reason;  // Skipped and Invalid
  LigerSpeedRow row;   // Run
};
[[nodiscard]] core::Result<std::vector<LigerRowItem>> read_liger_rows(std::string_view text);

// file_name goes into each run's raw source. A missing required column fails the whole file.
[[nodiscard]] core::Result<std::vector<storage::SourceItem>> read_liger_csv(
    std::string_view text, std::string_view file_name);

}  // namespace kernelwatch::runners
