// The output formats a `command` entry declares, each read exactly as its producer writes it
// (docs/SOURCES.md): Google Benchmark's JSON reporter, nvbench's --json, pytest-benchmark's
// --benchmark-json and the CSV Liger-Kernel's benchmark scripts write, each into neutral results
// (a native name, workload parameters, the statistics the format has, in ns); kernelindex JSON
// Lines are records already. Pure functions over text; core/, kernels/ (quantiles), storage/
// (the Liger CSV mapping) and nlohmann/json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/record.hpp"

namespace kernelwatch::runners {

enum class OutputFormat {
  KernelindexJsonl,
  GbenchJson,
  NvbenchJson,
  PytestBenchmarkJson,
  LigerCsv
};
inline constexpr OutputFormat kOutputFormats[] = {
    OutputFormat::KernelindexJsonl, OutputFormat::GbenchJson, OutputFormat::NvbenchJson,
    OutputFormat::PytestBenchmarkJson, OutputFormat::LigerCsv};
[[nodiscard]] std::string_view to_string(OutputFormat format) noexcept;
[[nodiscard]] core::Result<OutputFormat> parse_output_format(std::string_view text);
// The harness that writes it: "google-benchmark", "nvbench", "pytest-benchmark", ...
[[nodiscard]] std::string_view harness_of(OutputFormat format) noexcept;

// The prefix of a kernelindex record printed among a program's own log lines.
inline constexpr std::string_view kKernelindexLinePrefix = "KERNELINDEX_RUN: ";

// One statistic of a result, in ns: "p20", "q1", "min", "mean", "stddev", ...
struct Statistic {
  std::string name;
  double ns = 0;
};

// One benchmark case of a program's output.
struct NativeResult {
  std::string name;  // the native benchmark name ("BM_Gemm", "test_rms_norm", "rms_norm.forward")
  // Workload axes as the format names them ("arg0" for a positional Google Benchmark argument),
  // values as text; sorted by name (the canonical order) by the parser.
  std::vector<std::pair<std::string, std::string>> params;
  std::string provider;  // the format's own provider field ("" when it has none)
  std::string workload;  // the label the format's own mapping gives ("" : from params)
  enum class Outcome { Timed, Failed } outcome = Outcome::Timed;
  std::string failure;                // Failed: why, in the format's own words
  double primary_ns = 0;              // Timed: the primary statistic
  std::string primary = "median";     // "median" or "mean"
  std::vector<Statistic> statistics;  // the rest the format has (p20/p80 only from raw samples)
  std::int64_t samples = 0;           // repetitions or samples behind the statistics, 0 unknown
  // The repetition times themselves where the format gives them (Google Benchmark's iteration
  // rows, pytest-benchmark's stats.data), in ns, in the output's order: `compare`'s samples.
  std::vector<double> samples_ns;
  // The case's full id in the harness's own words where it has one that names it uniquely
  // (pytest's node id "tests/test_mm.py::TestFp16::test_mm[1024]"): `compare` pairs cases by it.
  std::string native_id;
  nlohmann::json metrics = nlohmann::json::object();  // snake_case names, numbers only
  std::vector<std::string> settings;   // native run settings that change timing ("repeats:10")
  std::string device;                  // the device the program says it ran on ("" none)
  std::string implementation_version;  // the measured code's version where the output says
};

// A whole output: its results, and what the protocol says of them.
struct ParsedOutput {
  std::string harness_version;  // "" when the output does not say
  std::string timer;            // schema word: "wall_clock", "cuda_events", "perf_counter", ...
  std::string statistics_note;  // which statistics, from what ("median: the median aggregate ...")
  std::vector<NativeResult> results;
  std::size_t skipped = 0;  // cases the output marks skipped: not runs
  // What the output says of the machine it ran on, as (field, value) in a fixed order: Google
  // Benchmark's context (host_name, num_cpus, library_build_type), pytest-benchmark's
  // machine_info (node, cpu, python); "" values are left out. `compare` refuses two outputs
  // whose fields differ; the daemon probes the host itself and does not read these.
  std::vector<std::pair<std::string, std::string>> environment;
};

// ParseError with a one-line message when the text is not the format ("not Google Benchmark
// JSON: no \"benchmarks\" array"); a result the format marks failed, or with times that are not
// positive finite numbers, quantiles out of order or an unknown unit, is a Failed result.
[[nodiscard]] core::Result<ParsedOutput> parse_gbench_json(std::string_view text);
[[nodiscard]] core::Result<ParsedOutput> parse_nvbench_json(std::string_view text);
[[nodiscard]] core::Result<ParsedOutput> parse_pytest_benchmark_json(std::string_view text);
[[nodiscard]] core::Result<ParsedOutput> parse_liger_csv_output(std::string_view text);
[[nodiscard]] core::Result<ParsedOutput> parse_output(OutputFormat format, std::string_view text);

// A Google Benchmark name ("BM_Gemm/512/threads:2/real_time") as its JSON's run_name is read: the
// native name, the parameters sorted, the run settings. For --benchmark_list_tests' lines.
[[nodiscard]] NativeResult gbench_case(const std::string& run_name);

// kernelindex records, one per line: lines prefixed kKernelindexLinePrefix when any line is,
// else every line that starts with '{'; other lines are the program's log and are skipped.
// ParseError names the line ("line 3: run.spec.status: missing").
[[nodiscard]] core::Result<std::vector<core::Record>> parse_kernelindex_lines(
    std::string_view text);

// Checks one result's times: positive, finite, within what a record carries, p20 <= primary <=
// p80 where both exist; makes the result Failed with the reason when not.
void check_times(NativeResult& result);

// The canonical workload label of parameters: "name_value" joined by '-', in the given order,
// every character outside [a-z0-9.] of a name or value replaced by '.'; "default" for none. At
// most 200 bytes (longer labels end in a digest of the whole).
[[nodiscard]] std::string workload_label(
    const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace kernelwatch::runners
