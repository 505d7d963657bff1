// `kernelwatch compare BASE CANDIDATE`: a verdict before merge. Two result files of any format a
// `command` entry reads, paired case by case (runners/compare_input), each pair judged by
// detectors/compare; printed for people (a table), pull requests (Markdown), tools (JSON) and
// CI test reports (JUnit XML). Exit 0: nothing slower; 1: a case slower or failing in the
// candidate; 2: a case ambiguous or with too little data, only with --fail-on-ambiguous; 3:
// refused (bad usage, an unreadable or malformed file, no case in common, or cases whose
// environments differ). Composition code; docs/CI.md.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "detectors/compare.hpp"
#include "runners/command.hpp"
#include "runners/compare_input.hpp"

namespace kernelwatch::daemon {

inline constexpr int kCompareSame = 0;
inline constexpr int kCompareSlower = 1;
inline constexpr int kCompareAmbiguous = 2;
inline constexpr int kCompareRefused = 3;

enum class CompareFormat { Table, Markdown, Json, Junit };

// A threshold for the cases whose id matches `pattern` ('*' any run of characters, '?' one).
struct ThresholdRule {
  std::string pattern;
  double threshold = 0.05;
};

struct CompareCommandOptions {
  std::filesystem::path baseline;
  std::filesystem::path candidate;
  std::string format = "auto";  // an output format name (runners/formats.hpp) or "auto"
  std::string threshold = "5%";
  std::filesystem::path thresholds;  // a file of "PATTERN THRESHOLD" lines; first match wins
  std::string confidence = "95%";
  bool fail_on_ambiguous = false;
  std::vector<std::string> ignore_environment;  // environment fields not compared
  CompareFormat output = CompareFormat::Table;
  // Rounds: the two builds' programs run alternately (A B, B A, ...) `rounds` times, either as
  // two argvs (after "--", inheriting this environment) or as a config's command entry run in
  // the two directories (its own env, timeout and output).
  std::filesystem::path baseline_dir;
  std::filesystem::path candidate_dir;
  std::vector<std::string> baseline_argv;
  std::vector<std::string> candidate_argv;
  std::filesystem::path config;
  std::string entry;
  std::optional<int> rounds;    // default 6 (the fewest the signed-rank interval needs at 95%)
  std::string timeout = "10m";  // of each program run (argv form; an entry has its own)
  // --against URL|DB: the candidate's file(s) (baseline, then candidate) judged against each
  // key's learned band, through a daemon's POST /api/v1/judge or a database read-only.
  std::string against;
  std::filesystem::path token_file;  // --against URL; "": the KERNELWATCH_TOKEN variable
};

// One row of the report.
struct CompareRow {
  std::string id;
  // "same", "faster", "slower", "ambiguous"; "failed" (the candidate failed), "baseline failed",
  // "refused" (environments differ).
  std::string verdict;
  std::optional<detectors::Comparison> comparison;  // absent for failed and refused rows
  detectors::CaseTimes baseline;
  detectors::CaseTimes candidate;
  double threshold = 0.05;
  std::string reason;
};

struct CompareReport {
  std::string baseline_name;  // the paths as given
  std::string candidate_name;
  std::string format;  // the input format
  double confidence = 0.95;
  double threshold = 0.05;  // the default threshold
  // What the verdicts are against when not a threshold ("each key's learned band"); "": the
  // threshold and the intervals.
  std::string basis;
  std::vector<CompareRow> rows;  // in the baseline's order
  std::vector<std::string> only_in_baseline;
  std::vector<std::string> only_in_candidate;
  int exit_code = kCompareSame;
  [[nodiscard]] std::size_t count(std::string_view verdict) const;
};

// A result (or thresholds) file's text, at most 64 MiB (the command runner's max_output_bytes);
// errors say why without the path ("no such file", "a directory, not a result file").
[[nodiscard]] core::Result<std::string> read_result_file(const std::filesystem::path& path);

// "5%" or "0.05" -> 0.05 (a bare number must be below 1: "5" is refused, not read as 500%); a
// threshold in [0, 10) (0% to 1000%), a confidence in (0.5, 1).
[[nodiscard]] core::Result<double> parse_fraction(std::string_view text, std::string_view what);
// The rules of a thresholds file's text ("# comment", blank lines, "PATTERN THRESHOLD").
[[nodiscard]] core::Result<std::vector<ThresholdRule>> parse_threshold_rules(std::string_view text);
[[nodiscard]] bool glob_match(std::string_view pattern, std::string_view text);
// The threshold of the first rule whose pattern matches the case id, else `fallback`.
[[nodiscard]] double threshold_for(const std::string& id, double fallback,
                                   const std::vector<ThresholdRule>& rules);

// The first environment field both cases name with different values ("" when none), as a
// reason: `host_name "a" in the baseline, "b" in the candidate`.
[[nodiscard]] std::string environment_difference(const runners::CompareCase& baseline,
                                                 const runners::CompareCase& candidate,
                                                 const std::vector<std::string>& ignored);
// The report's exit code from its rows (refused > slower or failed > ambiguous, if asked).
void set_exit_code(CompareReport& report, bool fail_on_ambiguous);

// Pairs the two inputs' cases and judges each pair.
[[nodiscard]] CompareReport compare_inputs(const runners::CompareInput& baseline,
                                           const runners::CompareInput& candidate, double threshold,
                                           const std::vector<ThresholdRule>& rules,
                                           double confidence,
                                           const std::vector<std::string>& ignore_environment,
                                           bool fail_on_ambiguous);

void print_compare_report(const CompareReport& report, CompareFormat format, std::ostream& out);

int run_compare(const CompareCommandOptions& options, std::ostream& out, std::ostream& err);

// The command entry `name` of a config file (compare --entry, --against with an entry's output).
[[nodiscard]] core::Result<runners::CommandEntry> command_entry_of(
    const std::filesystem::path& config, const std::string& name);

// The rounds form (compare_rounds.cpp): run_compare() calls it when argvs or an entry are given.
int run_compare_rounds(const CompareCommandOptions& options, double threshold,
                       const std::vector<ThresholdRule>& rules, double confidence,
                       std::optional<runners::OutputFormat> format, std::ostream& out,
                       std::ostream& err);

}  // namespace kernelwatch::daemon
