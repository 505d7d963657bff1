// One result file as `kernelwatch compare` reads it: its cases, each with an identity (what is
// measured: benchmark, parameters, provider), an environment (what it ran on, which must match
// to compare) and its times. Any format a `command` entry reads (runners/formats.hpp); the
// format is told or recognised from the text. Pure functions over text; level 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "detectors/compare.hpp"
#include "runners/formats.hpp"

namespace kernelwatch::runners {

struct CompareCase {
  // "BM_Saxpy/4096", "test_saxpy[n=4096]", "rms_norm/forward liger hidden4096-bf16": unique in
  // its input; the two inputs' cases are paired by it.
  std::string id;
  // (field, value): the output's machine facts, then the case's device; compared field by field.
  std::vector<std::pair<std::string, std::string>> environment;
  detectors::CaseTimes times;
  std::string failure;           // the format marks the case failed: why ("" when timed)
  std::int64_t occurrences = 1;  // the case's results in the file; several: their medians are
                                 // the samples (runs of the case)
  // Several results of this id from two environments: the first field that differs ("" when
  // they agree); such a case is refused, never pooled.
  std::string mixed_environments;
};

struct CompareInput {
  OutputFormat format = OutputFormat::GbenchJson;
  std::string harness_version;
  std::string statistics_note;
  std::vector<CompareCase> cases;  // in the file's order
  std::size_t skipped = 0;         // cases the output marks skipped
};

// The format of a result text, recognised from its structure: a JSON object with "context" and
// "benchmarks" (Google Benchmark), with "machine_info" (pytest-benchmark), with "devices" or
// "meta" (nvbench), kernelindex records one per line (or prefixed KERNELINDEX_RUN: ), a CSV
// whose header names Liger's columns. ParseError with the formats when none fits.
[[nodiscard]] core::Result<OutputFormat> recognise_format(std::string_view text);

// The cases of a result text in `format` (nullopt: recognise_format). ParseError as the format's
// parser says, or "no benchmark case" for an output without one.
[[nodiscard]] core::Result<CompareInput> read_compare_input(std::string_view text,
                                                            std::optional<OutputFormat> format);

}  // namespace kernelwatch::runners
