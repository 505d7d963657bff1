// compare's rounds: the baseline's and the candidate's programs run alternately on this machine
// (A B in odd rounds, B A in even ones, so a steady drift falls on both sides alike), each
// output read as the first one's format, each case judged on its rounds' paired medians
// (detectors::compare_rounds).
#include <cmath>
#include <map>
#include <ostream>

#include "config/config.hpp"
#include "config/duration.hpp"
#include "core/json_limits.hpp"
#include "daemon/compare_command.hpp"
#include "detectors/statistics.hpp"
#include "runners/command.hpp"
#include "runners/command_config.hpp"
#include "runners/liger_bench.hpp"

namespace kernelwatch::daemon {
namespace {

constexpr int kMaxRounds = 1000;

// One side's cases over the rounds: each case's median in each round (NaN where the round had
// no timed result of it), the first environment seen, the last failure.
struct SideRounds {
  std::vector<std::string> order;  // ids in the first round's order
  std::map<std::string, std::vector<double>> medians;
  std::map<std::string, runners::CompareCase> first;
  std::map<std::string, std::string> failure;
};

void add_round(SideRounds& side, const runners::CompareInput& input, int round, int rounds) {
  for (const auto& c : input.cases) {
    auto [it, fresh] = side.medians.try_emplace(c.id, std::vector<double>(rounds, NAN));
    if (fresh) {
      side.order.push_back(c.id);
      side.first.emplace(c.id, c);
    }
    if (c.failure.empty()) {
      it->second[static_cast<std::size_t>(round)] = c.times.median_ns;
    } else {
      side.failure[c.id] = c.failure;
    }
  }
}

detectors::CaseTimes summary(const std::vector<double>& medians) {
  std::vector<double> timed;
  for (const double v : medians) {
    if (std::isfinite(v)) timed.push_back(v);
  }
  detectors::CaseTimes t;
  if (timed.empty()) return t;
  t.median_ns = detectors::quantile(timed, 0.5);
  t.p20_ns = detectors::quantile(timed, 0.2);
  t.p80_ns = detectors::quantile(timed, 0.8);
  t.count = static_cast<std::int64_t>(timed.size());
  t.samples_ns = std::move(timed);
  return t;
}

// The two programs a comparison runs: an entry's command in each build directory (--config
// --entry --baseline DIR --candidate DIR), or two argvs; what a refusal says otherwise.
struct Sides {
  runners::CommandEntry entries[2];
  runners::EnvironmentBase environment = runners::EnvironmentBase::Inherit;
  std::string names[2];
};

core::Result<Sides> entry_sides(const CompareCommandOptions& options,
                                std::optional<runners::OutputFormat>& format) {
  const auto refuse = [](std::string why) {
    return core::fail(core::ErrorCode::InvalidArgument, std::move(why));
  };
  if (options.entry.empty() || options.config.empty() || options.baseline_dir.empty() ||
      options.candidate_dir.empty()) {
    return refuse(
        "an entry's rounds need --config FILE --entry NAME --baseline DIR --candidate DIR");
  }
  if (!options.baseline_argv.empty() || !options.baseline.empty()) {
    return refuse("give result files, argvs or --entry, one of them");
  }
  auto entry = command_entry_of(options.config, options.entry);
  if (!entry) return refuse(entry.error().message);
  if (format && *format != entry->format) {
    return refuse("--format: the entry's output is " + std::string(to_string(entry->format)));
  }
  format = entry->format;
  Sides sides;
  sides.environment = runners::EnvironmentBase::Minimal;
  for (int i = 0; i < 2; ++i) {
    sides.entries[i] = *entry;
    const std::filesystem::path& dir = i == 0 ? options.baseline_dir : options.candidate_dir;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      return refuse((i == 0 ? "--baseline " : "--candidate ") + dir.string() + ": not a directory");
    }
    sides.entries[i].working_directory = dir;
    sides.names[i] = dir.string();
  }
  return sides;
}

core::Result<Sides> argv_sides(const CompareCommandOptions& options) {
  const auto refuse = [](std::string why) {
    return core::fail(core::ErrorCode::InvalidArgument, std::move(why));
  };
  if (options.baseline_argv.empty() || options.candidate_argv.empty()) {
    return refuse("rounds need two argvs: -- BASE_PROGRAM ARGS... -- CANDIDATE_PROGRAM ARGS...");
  }
  if (!options.baseline.empty() || !options.baseline_dir.empty()) {
    return refuse("give two result files or two argvs, not both");
  }
  const auto timeout = config::parse_duration(options.timeout);
  if (!timeout || timeout->count() <= 0) {
    return refuse("--timeout: \"" + core::utf8_prefix(options.timeout, 40) +
                  "\" is not a duration such as 10m or 90s");
  }
  Sides sides;
  for (int i = 0; i < 2; ++i) {
    runners::CommandEntry& side = sides.entries[i];
    side.name = i == 0 ? "baseline" : "candidate";
    side.command = i == 0 ? options.baseline_argv : options.candidate_argv;
    side.timeout = *timeout;
    // A program that writes its results to a file names it {out}; the rest print them.
    for (const auto& arg : side.command) {
      if (arg.find(runners::kOutPlaceholder) != std::string::npos) side.output = "{out}";
    }
    std::string line;
    for (const auto& arg : side.command) line += (line.empty() ? "" : " ") + arg;
    sides.names[i] = core::utf8_prefix(line, 200);
  }
  return sides;
}

// What the rounds gave: each side's cases, and the rounds left out (a disturbed GPU).
struct Rounds {
  SideRounds sides[2];
  std::vector<bool> disturbed;
};

// Runs the rounds (A B, then B A). The exit code when they end early: the candidate failed
// (slower), or the baseline failed or an output could not be read (refused, said on `err`).
std::optional<int> run_rounds(const Sides& sides, int rounds,
                              std::optional<runners::OutputFormat>& format, Rounds& out,
                              std::ostream& err) {
  runners::CommandContext context;
  // The GPU sampled while each program runs, as the daemon samples a cycle's runs: a round whose
  // SM clock fell under 75% of its maximum, or that shared the GPU with another compute process,
  // proves nothing and is left out of both sides (no GPU: no samples, every round counts).
  context.sampler = runners::nvml_sampler();
  out.disturbed.assign(static_cast<std::size_t>(rounds), false);
  const auto refuse = [&](const std::string& why) {
    err << "kernelwatch compare: " << why << '\n';
    return kCompareRefused;
  };
  for (int round = 0; round < rounds; ++round) {
    for (int step = 0; step < 2; ++step) {
      const int i = round % 2 == 0 ? step : 1 - step;
      const char* which = i == 0 ? "the baseline" : "the candidate";
      std::vector<kernels::GpuSample> samples;
      const auto text =
          runners::run_entry_output(sides.entries[i], sides.environment, context, &samples);
      if (const std::string why = runners::inconclusive_during(samples); !why.empty() && text) {
        out.disturbed[static_cast<std::size_t>(round)] = true;
        err << "kernelwatch compare: round " << (round + 1) << ", " << which
            << ": inconclusive, left out: " << why << '\n';
      }
      if (!text && i == 1) {
        // The candidate's program crashed, timed out or exited non-zero: the change broke it.
        err << "kernelwatch compare: round " << (round + 1)
            << ", the candidate failed: " << core::utf8_prefix(text.error().message, 600) << '\n';
        return kCompareSlower;
      }
      if (!text) {
        return refuse("round " + std::to_string(round + 1) + ", " + which + ": " +
                      core::utf8_prefix(text.error().message, 600));
      }
      auto input = runners::read_compare_input(*text, format);
      if (!input) {
        return refuse("round " + std::to_string(round + 1) + ", " + which +
                      "'s output: " + core::utf8_prefix(input.error().message, 600));
      }
      format = input->format;
      add_round(out.sides[i], *input, round, rounds);
    }
    err << "kernelwatch compare: round " << (round + 1) << " of " << rounds << " done\n";
  }
  return std::nullopt;
}

// One case in both sides, judged on the medians of the rounds both timed and none disturbed.
CompareRow judge_case(const std::string& id, const Rounds& rounds, double threshold,
                      double confidence, const std::vector<std::string>& ignore_environment) {
  const SideRounds& a = rounds.sides[0];
  const SideRounds& b = rounds.sides[1];
  CompareRow row;
  row.id = id;
  row.threshold = threshold;
  row.baseline = summary(a.medians.at(id));
  row.candidate = summary(b.medians.at(id));
  if (const std::string diff =
          environment_difference(a.first.at(id), b.first.at(id), ignore_environment);
      !diff.empty()) {
    row.verdict = "refused";
    row.reason = "not compared: the environments differ: " + diff;
  } else if (b.failure.contains(id)) {
    row.verdict = "failed";
    row.reason = "the candidate failed: " + core::utf8_prefix(b.failure.at(id), 300);
  } else if (a.failure.contains(id)) {
    row.verdict = "baseline failed";
    row.reason = "not compared: the baseline failed: " + core::utf8_prefix(a.failure.at(id), 300);
  } else {
    std::vector<double> x;
    std::vector<double> y;
    const auto& ma = a.medians.at(id);
    const auto& mb = b.medians.at(id);
    for (std::size_t r = 0; r < ma.size(); ++r) {
      if (std::isfinite(ma[r]) && std::isfinite(mb[r]) && !rounds.disturbed[r]) {
        x.push_back(ma[r]);
        y.push_back(mb[r]);
      }
    }
    detectors::CompareOptions compare_options;
    compare_options.threshold = row.threshold;
    compare_options.confidence = confidence;
    row.comparison = detectors::compare_rounds(x, y, compare_options);
    row.verdict = std::string(detectors::to_string(row.comparison->verdict));
    row.reason = row.comparison->reason;
  }
  return row;
}

}  // namespace

int run_compare_rounds(const CompareCommandOptions& options, double threshold,
                       const std::vector<ThresholdRule>& rules, double confidence,
                       std::optional<runners::OutputFormat> format, std::ostream& out,
                       std::ostream& err) {
  const auto refuse = [&](const std::string& why) {
    err << "kernelwatch compare: " << why << '\n';
    return kCompareRefused;
  };
  const int rounds = options.rounds.value_or(6);
  if (rounds < 2 || rounds > kMaxRounds) {
    return refuse("--rounds: " + std::to_string(rounds) + " is not between 2 and " +
                  std::to_string(kMaxRounds));
  }
  const bool of_entry = !options.entry.empty() || !options.config.empty();
  const auto sides = of_entry ? entry_sides(options, format) : argv_sides(options);
  if (!sides) return refuse(sides.error().message);
  Rounds ran;
  if (const auto ended = run_rounds(*sides, rounds, format, ran, err)) return *ended;

  CompareReport report;
  report.baseline_name = sides->names[0];
  report.candidate_name = sides->names[1];
  report.format = std::string(runners::to_string(*format));
  report.confidence = confidence;
  report.threshold = threshold;
  for (const auto& id : ran.sides[0].order) {
    if (!ran.sides[1].medians.contains(id)) {
      report.only_in_baseline.push_back(id);
      continue;
    }
    double case_threshold = threshold;
    for (const auto& rule : rules) {
      if (glob_match(rule.pattern, id)) {
        case_threshold = rule.threshold;
        break;
      }
    }
    report.rows.push_back(
        judge_case(id, ran, case_threshold, confidence, options.ignore_environment));
  }
  for (const auto& id : ran.sides[1].order) {
    if (!ran.sides[0].medians.contains(id)) report.only_in_candidate.push_back(id);
  }
  if (report.rows.empty()) return refuse("no case in common between the two programs' outputs");
  set_exit_code(report, options.fail_on_ambiguous);
  print_compare_report(report, options.output, out);
  return report.exit_code;
}

}  // namespace kernelwatch::daemon
