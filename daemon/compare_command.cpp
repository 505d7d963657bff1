#include "daemon/compare_command.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <ostream>
#include <system_error>

#include "core/json_limits.hpp"
#include "daemon/judge_command.hpp"

namespace kernelwatch::daemon {
namespace {

using core::ErrorCode;

// The largest result file read: the `command` runner's default max_output_bytes.
constexpr std::uintmax_t kMaxFileBytes = 64ull * 1024 * 1024;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string in_quotes(std::string_view text) {
  return "\"" + core::utf8_prefix(text, 120) + "\"";
}

}  // namespace

double threshold_for(const std::string& id, double fallback,
                     const std::vector<ThresholdRule>& rules) {
  for (const auto& rule : rules) {
    if (glob_match(rule.pattern, id)) return rule.threshold;
  }
  return fallback;
}

std::string environment_difference(const runners::CompareCase& a, const runners::CompareCase& b,
                                   const std::vector<std::string>& ignored) {
  std::map<std::string, std::string> theirs(b.environment.begin(), b.environment.end());
  for (const auto& [field, value] : a.environment) {
    if (std::find(ignored.begin(), ignored.end(), field) != ignored.end()) continue;
    const auto it = theirs.find(field);
    if (it == theirs.end() || it->second == value) continue;
    return field + " " + in_quotes(value) + " in the baseline, " + in_quotes(it->second) +
           " in the candidate";
  }
  return "";
}

void set_exit_code(CompareReport& report, bool fail_on_ambiguous) {
  report.exit_code = kCompareSame;
  if (report.count("refused") > 0) {
    report.exit_code = kCompareRefused;
  } else if (report.count("slower") > 0 || report.count("failed") > 0) {
    report.exit_code = kCompareSlower;
  } else if (fail_on_ambiguous && report.count("ambiguous") > 0) {
    report.exit_code = kCompareAmbiguous;
  }
}

core::Result<std::string> read_result_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return core::fail(ErrorCode::NotFound, "no such file");
  }
  if (std::filesystem::is_directory(status)) {
    return core::fail(ErrorCode::InvalidArgument, "a directory, not a result file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::fail(ErrorCode::IoError, "cannot be opened for reading");
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) {
      return core::fail(ErrorCode::InvalidArgument,
                        "larger than 64 MiB, the most compare reads of a result file");
    }
  }
  if (in.bad()) return core::fail(ErrorCode::IoError, "a read error");
  return text;
}

std::size_t CompareReport::count(std::string_view verdict) const {
  return static_cast<std::size_t>(std::count_if(
      rows.begin(), rows.end(), [&](const CompareRow& r) { return r.verdict == verdict; }));
}

core::Result<double> parse_fraction(std::string_view text, std::string_view what) {
  std::string_view number = trim(text);
  const bool percent = !number.empty() && number.back() == '%';
  if (percent) number.remove_suffix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || number.empty() ||
      !std::isfinite(value)) {
    return core::fail(ErrorCode::InvalidArgument, std::string(what) + ": " + in_quotes(text) +
                                                      " is not a percentage (\"5%\") or "
                                                      "a fraction (\"0.05\")");
  }
  if (percent) value /= 100.0;
  if (what == "--confidence") {
    if (!(value > 0.5 && value < 1.0)) {
      return core::fail(ErrorCode::InvalidArgument,
                        "--confidence: " + in_quotes(text) + " must be above 50% and below 100%");
    }
  } else if (!percent && value >= 1) {
    // "5" could be 5% or 500%: a bare number is a fraction below 1.
    return core::fail(ErrorCode::InvalidArgument,
                      std::string(what) + ": " + in_quotes(text) +
                          " is not a fraction below 1 (for 5%, write 5% or 0.05)");
  } else if (!(value >= 0 && value < 10)) {
    return core::fail(ErrorCode::InvalidArgument, std::string(what) + ": " + in_quotes(text) +
                                                      " must be 0% or more, below 1000%");
  }
  return value;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative, with one backtrack point per '*': linear in practice, never recursive.
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

core::Result<std::vector<ThresholdRule>> parse_threshold_rules(std::string_view text) {
  std::vector<ThresholdRule> rules;
  std::size_t number = 0;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++number;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.find_last_of(" \t");
    if (space == std::string_view::npos) {
      return core::fail(ErrorCode::ParseError,
                        "line " + std::to_string(number) +
                            ": expected \"PATTERN THRESHOLD\" (\"BM_Saxpy/* 3%\"), got " +
                            in_quotes(line));
    }
    ThresholdRule rule;
    rule.pattern = std::string(trim(line.substr(0, space)));
    auto value = parse_fraction(line.substr(space + 1), "threshold");
    if (!value) {
      return core::fail(ErrorCode::ParseError,
                        "line " + std::to_string(number) + ": " + value.error().message);
    }
    rule.threshold = *value;
    rules.push_back(std::move(rule));
    if (end == text.size()) break;
  }
  return rules;
}

CompareReport compare_inputs(const runners::CompareInput& baseline,
                             const runners::CompareInput& candidate, double threshold,
                             const std::vector<ThresholdRule>& rules, double confidence,
                             const std::vector<std::string>& ignore_environment,
                             bool fail_on_ambiguous) {
  CompareReport report;
  report.format = std::string(runners::to_string(baseline.format));
  report.confidence = confidence;
  report.threshold = threshold;
  std::map<std::string, const runners::CompareCase*> theirs;
  for (const auto& c : candidate.cases) theirs.emplace(c.id, &c);
  std::map<std::string, bool> paired;
  for (const auto& base : baseline.cases) {
    const auto it = theirs.find(base.id);
    if (it == theirs.end()) {
      report.only_in_baseline.push_back(base.id);
      continue;
    }
    paired[base.id] = true;
    const runners::CompareCase& cand = *it->second;
    CompareRow row;
    row.id = base.id;
    row.baseline = base.times;
    row.candidate = cand.times;
    row.threshold = threshold_for(base.id, threshold, rules);
    if (!base.mixed_environments.empty() || !cand.mixed_environments.empty()) {
      row.verdict = "refused";
      row.reason =
          std::string("not compared: the ") +
          (base.mixed_environments.empty() ? "candidate" : "baseline") +
          " has results of this case from two environments (" +
          (base.mixed_environments.empty() ? cand.mixed_environments : base.mixed_environments) +
          "): give one machine's results";
    } else if (const std::string diff = environment_difference(base, cand, ignore_environment);
               !diff.empty()) {
      row.verdict = "refused";
      row.reason = "not compared: the environments differ: " + diff;
    } else if (!cand.failure.empty()) {
      row.verdict = "failed";
      row.reason = "the candidate failed: " + core::utf8_prefix(cand.failure, 300);
    } else if (!base.failure.empty()) {
      row.verdict = "baseline failed";
      row.reason = "not compared: the baseline failed: " + core::utf8_prefix(base.failure, 300);
    } else {
      detectors::CompareOptions options;
      options.threshold = row.threshold;
      options.confidence = confidence;
      row.comparison = detectors::compare_times(base.times, cand.times, options);
      row.verdict = std::string(detectors::to_string(row.comparison->verdict));
      row.reason = row.comparison->reason;
    }
    report.rows.push_back(std::move(row));
  }
  for (const auto& c : candidate.cases) {
    if (!paired.contains(c.id)) report.only_in_candidate.push_back(c.id);
  }
  set_exit_code(report, fail_on_ambiguous);
  return report;
}

int run_compare(const CompareCommandOptions& options, std::ostream& out, std::ostream& err) {
  const auto refuse = [&](const std::string& why) {
    err << "kernelwatch compare: " << why << '\n';
    return kCompareRefused;
  };
  std::optional<runners::OutputFormat> format;
  if (options.format != "auto") {
    auto parsed = runners::parse_output_format(options.format);
    if (!parsed) return refuse("--format: " + parsed.error().message + " (or auto)");
    format = *parsed;
  }
  const auto threshold = parse_fraction(options.threshold, "--threshold");
  if (!threshold) return refuse(threshold.error().message);
  const auto confidence = parse_fraction(options.confidence, "--confidence");
  if (!confidence) return refuse(confidence.error().message);
  std::vector<ThresholdRule> rules;
  if (!options.thresholds.empty()) {
    const auto text = read_result_file(options.thresholds);
    if (!text) return refuse(options.thresholds.string() + ": " + text.error().message);
    auto parsed = parse_threshold_rules(*text);
    if (!parsed) return refuse(options.thresholds.string() + ": " + parsed.error().message);
    rules = std::move(*parsed);
  }
  if (!options.against.empty()) return run_judge(options, *threshold, rules, out, err);
  const bool rounds = !options.baseline_argv.empty() || !options.candidate_argv.empty() ||
                      !options.config.empty() || !options.entry.empty() ||
                      !options.baseline_dir.empty() || !options.candidate_dir.empty();
  if (rounds) {
    return run_compare_rounds(options, *threshold, rules, *confidence, format, out, err);
  }
  if (options.baseline.empty() || options.candidate.empty()) {
    return refuse(
        "give two result files (BASE CANDIDATE), two argvs (-- BASE_ARGV -- "
        "CANDIDATE_ARGV) or --config FILE --entry NAME --baseline DIR --candidate DIR");
  }
  if (options.rounds) return refuse("--rounds: only with argvs or --entry");
  const auto read =
      [&](const std::filesystem::path& path,
          std::optional<runners::OutputFormat> as) -> core::Result<runners::CompareInput> {
    const auto text = read_result_file(path);
    if (!text) return core::fail(text.error().code, path.string() + ": " + text.error().message);
    auto input = runners::read_compare_input(*text, as);
    if (!input) {
      return core::fail(input.error().code,
                        path.string() + ": " + core::utf8_prefix(input.error().message, 600));
    }
    return input;
  };
  const auto baseline = read(options.baseline, format);
  if (!baseline) return refuse(baseline.error().message);
  // The candidate is read as the baseline's format: two formats are never compared.
  const auto candidate = read(options.candidate, baseline->format);
  if (!candidate) return refuse(candidate.error().message);
  CompareReport report = compare_inputs(*baseline, *candidate, *threshold, rules, *confidence,
                                        options.ignore_environment, options.fail_on_ambiguous);
  report.baseline_name = options.baseline.string();
  report.candidate_name = options.candidate.string();
  if (report.rows.empty()) {
    return refuse("no case in common: " + options.baseline.string() + " has " +
                  std::to_string(baseline->cases.size()) + ", " + options.candidate.string() +
                  " has " + std::to_string(candidate->cases.size()) + " (e.g. " +
                  in_quotes(baseline->cases.front().id) + " and " +
                  in_quotes(candidate->cases.front().id) + ")");
  }
  print_compare_report(report, options.output, out);
  if (report.exit_code == kCompareRefused) {
    err << "kernelwatch compare: refused " << report.count("refused")
        << " case(s) whose environments differ (--ignore-environment FIELD to compare them "
           "anyway)\n";
  }
  return report.exit_code;
}

}  // namespace kernelwatch::daemon
