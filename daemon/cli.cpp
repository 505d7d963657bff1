#include "daemon/cli.hpp"

#include <functional>
#include <iostream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "daemon/backtest_command.hpp"
#include "daemon/bench_command.hpp"
#include "daemon/compare_command.hpp"
#include "daemon/daemon.hpp"
#include "daemon/dashboard.hpp"
#include "daemon/discover_command.hpp"
#include "daemon/status_command.hpp"
#include "daemon/store_commands.hpp"
#include "kernels/catalogue.hpp"

#ifndef KERNELWATCH_VERSION
#define KERNELWATCH_VERSION "0.0.0-dev"
#endif

namespace kernelwatch::daemon {
namespace {

// The options of every subcommand, and the action the parsed one selects.
struct Commands {
  ImportOptions import;
  std::filesystem::path keys_db;
  bool keys_json = false;
  HistoryOptions history;
  bool history_json = false;
  BacktestCommandOptions backtest;
  bool backtest_json = false;
  BenchOptions bench;
  bool bench_json = false;
  CompareCommandOptions compare;
  bool compare_markdown = false;
  bool compare_json = false;
  bool compare_junit = false;
  DaemonOptions daemon;
  StatusOptions status;
  bool status_json = false;
  DiscoverOptions discover;
  bool discover_json = false;
  ReportOptions report;
  std::function<int()> action;
};

void add_import(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "import",
      "Import kernelindex JSON records (one, an array, or JSON Lines) and Liger benchmark CSV.\n"
      "One import is one transaction: an invalid record aborts it and changes nothing.");
  sub->add_option("--db", c.import.db,
                  "SQLite database file (created when missing) or postgresql:// URL")
      ->required();
  sub->add_option("paths", c.import.inputs, "Files to import (.json, .jsonl, .csv)")->required();
  sub->add_flag("--skip-invalid", c.import.skip_invalid,
                "Import the valid records and list the invalid ones instead of aborting");
  sub->callback([&c] { c.action = [&c] { return run_import(c.import, std::cout, std::cerr); }; });
}

void add_keys(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "keys", "List every comparability key with its run count and first/last run");
  sub->add_option("--db", c.keys_db, "SQLite database file or postgresql:// URL")->required();
  sub->add_flag("--json", c.keys_json, "Print a JSON array instead of a table");
  sub->callback([&c] {
    c.action = [&c] {
      return run_keys(c.keys_db, c.keys_json ? OutputFormat::Json : OutputFormat::Table, std::cout,
                      std::cerr);
    };
  });
}

void add_history(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "history",
      "Print stored runs, newest first; --json prints kernelindex records that `import` accepts");
  c.history.filter.limit = 100;
  sub->add_option("--db", c.history.db, "SQLite database file or postgresql:// URL")->required();
  sub->add_option("--benchmark", c.history.filter.benchmark,
                  "Only this benchmark, e.g. tvd/backward");
  sub->add_option("--provider", c.history.filter.provider, "Only this provider, e.g. liger");
  sub->add_option("--workload", c.history.filter.workload,
                  "Only this workload, e.g. hidden16384-rows4096-fp32");
  sub->add_option("--environment", c.history.filter.environment,
                  "Only this environment, e.g. nvidia-h100-80gb-hbm3");
  sub->add_option("--limit", c.history.filter.limit, "At most N runs; 0 for all")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_flag("--json", c.history_json, "Print a JSON array of kernelindex records");
  sub->callback([&c] {
    c.history.format = c.history_json ? OutputFormat::Json : OutputFormat::Table;
    c.action = [&c] { return run_history(c.history, std::cout, std::cerr); };
  });
}

void add_backtest(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "backtest",
      "Replay the stored history of each key in observedAt order and print every alert the\n"
      "detectors would have raised (docs/DETECTION.md)");
  sub->add_option("--db", c.backtest.db, "SQLite database file or postgresql:// URL")->required();
  sub->add_option("--confirm", c.backtest.confirm,
                  "judged: each run as the daemon judged it (imported runs: next); none: judge\n"
                  "each run alone; next: a breach needs the next stored run to agree")
      ->check(CLI::IsMember({"judged", "none", "next"}))
      ->capture_default_str();
  sub->add_option("--config", c.backtest.config,
                  "Take the detector settings of this config file (default: the defaults)");
  sub->add_option("--benchmark", c.backtest.filter.benchmark, "Only alerts of this benchmark");
  sub->add_option("--provider", c.backtest.filter.provider, "Only alerts of this provider");
  sub->add_option("--workload", c.backtest.filter.workload, "Only alerts of this workload");
  sub->add_option("--environment", c.backtest.filter.environment,
                  "Only alerts of this environment");
  sub->add_flag("--json", c.backtest_json, "Print a JSON array, one object per alert");
  sub->callback([&c] {
    c.backtest.format = c.backtest_json ? OutputFormat::Json : OutputFormat::Table;
    c.action = [&c] { return run_backtest(c.backtest, std::cout, std::cerr); };
  });
}

void add_compare(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "compare",
      "Compare two result files of one benchmark program (the baseline build's and the\n"
      "candidate's) case by case: median change, its interval, and a verdict (slower, faster,\n"
      "same, ambiguous) against a threshold (docs/CI.md).\n"
      "Exit codes: 0 nothing slower, 1 a case slower or failing in the candidate, 2 a case\n"
      "ambiguous (only with --fail-on-ambiguous), 3 refused: bad usage, an unreadable or\n"
      "malformed file, no case in common, or environments that differ.");
  sub->add_option("BASE", c.compare.baseline, "The baseline's result file");
  sub->add_option("CANDIDATE", c.compare.candidate, "The candidate's result file");
  sub->add_option("--rounds", c.compare.rounds,
                  "Rounds of A B (B A) runs of the two programs given as argvs after \"--\"\n"
                  "(kernelwatch compare [OPTIONS] -- ./base/bench ARGS -- ./cand/bench ARGS;\n"
                  "{out} in an argv: a fresh path the program writes its results to) or of\n"
                  "--entry (default 6)");
  sub->add_option("--timeout", c.compare.timeout, "Of each run of an argv")->capture_default_str();
  sub->add_option("--config", c.compare.config,
                  "A kernelwatch config file: its --entry, and with --against DB its detector\n"
                  "settings (judge as that daemon does)");
  sub->add_option("--entry", c.compare.entry,
                  "A command entry of --config: its command runs in --baseline DIR and in\n"
                  "--candidate DIR, alternately, with its own env, timeout and output");
  sub->add_option(
      "--against", c.compare.against,
      "Judge the candidate's result file(s) against each key's learned band instead:\n"
      "a running daemon (http://127.0.0.1:9477, POST /api/v1/judge, token needed) or\n"
      "its database (read only); nothing is stored, nothing pages. Give the file(s) as\n"
      "BASE [CANDIDATE]: a second run confirms a breach of the first. kernelindex\n"
      "JSON Lines, or a program's output with --config FILE --entry NAME");
  sub->add_option("--token-file", c.compare.token_file,
                  "The daemon's token for --against URL (default: $KERNELWATCH_TOKEN)");
  sub->add_option("--baseline", c.compare.baseline_dir, "The baseline build's directory");
  sub->add_option("--candidate", c.compare.candidate_dir, "The candidate build's directory");
  sub->add_option("--format", c.compare.format,
                  "auto, gbench-json, nvbench-json, pytest-benchmark-json, kernelindex-jsonl or\n"
                  "liger-csv (auto: recognised from the baseline's text)")
      ->capture_default_str();
  sub->add_option("--threshold", c.compare.threshold,
                  "The smallest change that counts, as \"5%\" or \"0.05\"")
      ->capture_default_str();
  sub->add_option("--thresholds", c.compare.thresholds,
                  "A file of \"PATTERN THRESHOLD\" lines (\"BM_Saxpy/* 3%\"; * and ? match any\n"
                  "characters, one character); the first line whose pattern matches a case's id\n"
                  "gives its threshold, --threshold the rest");
  sub->add_option("--confidence", c.compare.confidence, "Of each change's interval")
      ->capture_default_str();
  sub->add_flag("--fail-on-ambiguous", c.compare.fail_on_ambiguous,
                "Exit 2 when a case cannot be told (too noisy, or too little data) and none is\n"
                "slower");
  sub->add_option("--ignore-environment", c.compare.ignore_environment,
                  "An environment field not to compare (host_name, node, device, ...); repeatable")
      ->allow_extra_args(false);
  auto* markdown = sub->add_flag("--markdown", c.compare_markdown,
                                 "Print a pull-request comment: a summary, the cases that moved,\n"
                                 "the rest collapsed");
  auto* as_json = sub->add_flag("--json", c.compare_json, "Print one JSON object");
  auto* junit = sub->add_flag("--junit", c.compare_junit,
                              "Print JUnit XML: a test case per benchmark case, a failure for a\n"
                              "slower one");
  markdown->excludes(as_json)->excludes(junit);
  as_json->excludes(junit);
  sub->callback([&c] {
    c.compare.output = c.compare_markdown ? CompareFormat::Markdown
                       : c.compare_json   ? CompareFormat::Json
                       : c.compare_junit  ? CompareFormat::Junit
                                          : CompareFormat::Table;
    c.action = [&c] { return run_compare(c.compare, std::cout, std::cerr); };
  });
}

void add_bench(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "bench",
      "Run kernel cases through the measurement harness (correctness gate, warm-up, timed\n"
      "repetitions with a cache flush before each) and print median, p20, p80 and GB/s;\n"
      "with --runner liger-bench, Liger's and PyTorch's own benchmarks in the keys of their\n"
      "imported history");
  sub->add_option("--kernel", c.bench.kernel,
                  "A kernel of kernelwatch's catalogue: " + kernels::kernel_names() +
                      "\n(with --runner: tvd or layer_norm)")
      ->required();
  sub->add_option("--pass", c.bench.pass, "forward, backward or full")->required();
  sub->add_option("--provider", c.bench.provider,
                  "kernelwatch-fused, kernelwatch-reference or all\n(with --runner: liger, torch, "
                  "huggingface or all)")
      ->capture_default_str();
  sub->add_option("--backend", c.bench.backend, "auto (cuda when a GPU is present), cuda or cpu")
      ->capture_default_str();
  sub->add_option("--rows", c.bench.rows, "LayerNorm rows (default 4096 on a GPU, 2048 on CPU)");
  sub->add_option("--hidden", c.bench.hidden,
                  "LayerNorm hidden size (default 16384 GPU, 2048 CPU)");
  sub->add_option("--tokens", c.bench.tokens, "TVD tokens (default 16384 on a GPU, 1024 on CPU)");
  sub->add_option("--vocab", c.bench.vocab, "TVD vocabulary (default 65536 on a GPU, 4096 on CPU)");
  sub->add_option("--dtype", c.bench.dtype, "fp32 or bf16")->capture_default_str();
  sub->add_option("--warmup-ms", c.bench.warmup_ms, "Warm-up budget in ms")->capture_default_str();
  sub->add_option("--rep-ms", c.bench.rep_ms,
                  "Timed repetitions budget in ms (at least 10 repetitions)")
      ->capture_default_str();
  sub->add_option("--seed", c.bench.seed, "Seed of the random inputs")->capture_default_str();
  sub->add_option("--db", c.bench.db,
                  "Also store the runs in this SQLite database (or postgresql:// URL)");
  sub->add_option("--runner", c.bench.runner,
                  "liger-bench: run Liger-Kernel's and PyTorch's own benchmarks through\n"
                  "runners/liger/liger_bench.py (providers liger, torch for tvd; liger,\n"
                  "huggingface for layer_norm; or all) instead of kernelwatch's kernels");
  sub->add_option("--python", c.bench.python,
                  "With --runner: the interpreter of a venv with torch, triton, liger-kernel")
      ->capture_default_str();
  sub->add_option("--script", c.bench.script,
                  "With --runner: liger_bench.py (default: the installed or source tree's copy)");
  sub->add_option("--workload", c.bench.workloads,
                  "Repeatable: a workload label of the kernel like tokens16384-vocab65536-fp32\n"
                  "or hidden16384-rows4096-fp32, instead of the shape flags (with --runner,\n"
                  "default: the founding workload)");
  sub->add_option("--timeout", c.bench.timeout, "With --runner: kill the runner after this long")
      ->capture_default_str();
  sub->add_flag("--json", c.bench_json,
                "Print the kernelindex records as a JSON array (`import` accepts it)");
  sub->add_option("--observed-at", c.bench.observed_at,
                  "Record every run as observed at this RFC 3339 instant (the daemon passes\n"
                  "its clock when it runs a case on another GPU); default: each run's own");
  sub->callback([&c] {
    c.bench.format = c.bench_json ? OutputFormat::Json : OutputFormat::Table;
    c.action = [&c] { return run_bench(c.bench, std::cout, std::cerr); };
  });
}

void add_daemon(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "daemon",
      "Run the regression watch: benchmarks on a schedule, detection, alerts, and the HTTP\n"
      "status API (default 127.0.0.1:9477). SIGHUP reloads the config; SIGTERM stops.");
  sub->add_option("--config", c.daemon.config,
                  "JSON config file (see config/kernelwatch.example.json)")
      ->required();
  sub->callback([&c] { c.action = [&c] { return run_daemon(c.daemon); }; });
}

void add_status(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand("status", "Print a running daemon's /api/v1/status as a table");
  sub->add_option("--url", c.status.url, "The daemon's HTTP address")->capture_default_str();
  sub->add_flag("--json", c.status_json, "Print the status JSON as it is");
  sub->add_flag("--all", c.status.all,
                "List every key, not only those with a problem (firing, failing, a regression "
                "waiting for its confirmation, acknowledged, inconclusive)");
  sub->add_flag("--fleet", c.status.fleet,
                "Every host of the PostgreSQL database the daemon shares (/api/v1/fleet), "
                "problems first");
  sub->callback([&c] {
    c.status.format = c.status_json ? OutputFormat::Json : OutputFormat::Table;
    c.action = [&c] { return run_status(c.status, std::cout, std::cerr); };
  });
}

void add_discover(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "discover",
      "Run a config's benchmark-program entries once, as the daemon would, store nothing, and\n"
      "print the keys their runs fall in with the history each already has in the database\n"
      "(--list: only list the cases, without running them, where the harness can)");
  sub->add_option("--config", c.discover.config, "JSON config file")->required();
  sub->add_option("--entry", c.discover.entry,
                  "Only this entry (a command or liger-scripts entry's name; liger-bench "
                  "<kernel>/<pass>)");
  sub->add_flag("--list", c.discover.list,
                "List the cases without running them (Google Benchmark: --benchmark_list_tests; "
                "pytest-benchmark: pytest --collect-only -q)");
  sub->add_flag("--json", c.discover_json, "Print the keys as a JSON array");
  sub->callback([&c] {
    c.discover.format = c.discover_json ? OutputFormat::Json : OutputFormat::Table;
    c.action = [&c] { return run_discover(c.discover, std::cout, std::cerr); };
  });
}

void add_report(CLI::App& app, Commands& c) {
  auto* sub = app.add_subcommand(
      "report",
      "Write the dashboard's pages (overview, one page per key and per alert, with charts) as\n"
      "static HTML files with relative links: a CI artifact or a folder for any web server");
  sub->add_option("--db", c.report.db, "SQLite database file or postgresql:// URL")->required();
  sub->add_option("--out", c.report.out, "Folder to write (created when missing)")->required();
  sub->add_option("--config", c.report.config,
                  "Take the detector settings of this config file (default: the defaults)");
  sub->callback([&c] { c.action = [&c] { return run_report(c.report, std::cout, std::cerr); }; });
}

// CLI11 checks required options before it looks for arguments nobody expects, so a mistyped
// flag was reported as the option it replaced ("keys --dbb x": "--db is required") and a
// mistyped command as "A subcommand is required". Name what is wrong first.
bool names_unknown_arguments(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return false;
  const std::string command = argv[1];
  if (command.empty() || command.front() == '-') return false;  // --help, --version, ...
  const CLI::App* sub = nullptr;
  std::string known;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    known += (known.empty() ? "" : ", ") + s->get_name();
    if (s->check_name(command)) sub = s;
  }
  if (sub == nullptr) {
    std::cerr << "kernelwatch: unknown command \"" << command << "\" (commands: " << known
              << ")\nRun with --help for more information.\n";
    return true;
  }
  for (int i = 2; i < argc; ++i) {
    const std::string_view token = argv[i];
    if (token == "--") break;
    if (token.size() < 3 || token.substr(0, 2) != "--") continue;
    const std::string name(token.substr(0, token.find('=')));
    if (sub->get_option_no_throw(name) == nullptr) {
      std::cerr << "kernelwatch " << command << ": unknown option " << name
                << "\nRun with --help for more information.\n";
      return true;
    }
  }
  return false;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "kernelwatch: regression detection for GPU kernels (TVD and LayerNorm).\n"
      "Stores kernelindex.dev run records in SQLite and compares each new median with the\n"
      "historic p20/p80 band of its comparability key.",
      "kernelwatch"};
  app.set_version_flag("--version", KERNELWATCH_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 failure, 2 bad usage (compare: its own, see compare --help).\n"
      "`kernelwatch SUBCOMMAND --help` for details.\n");

  Commands commands;
  add_import(app, commands);
  add_keys(app, commands);
  add_history(app, commands);
  add_backtest(app, commands);
  add_bench(app, commands);
  add_compare(app, commands);
  add_daemon(app, commands);
  add_status(app, commands);
  add_discover(app, commands);
  add_report(app, commands);

  // compare's own exit 2 means "ambiguous": its bad usage is a refusal, 3. Its two argvs follow
  // "--" and are split on the next "--"; CLI11 sees what comes before.
  const bool compare = argc > 1 && std::string_view(argv[1]) == "compare";
  const int usage = compare ? kCompareRefused : 2;
  if (compare) {
    for (int i = 2; i < argc; ++i) {
      if (std::string_view(argv[i]) != "--") continue;
      auto* side = &commands.compare.baseline_argv;
      for (int j = i + 1; j < argc; ++j) {
        if (std::string_view(argv[j]) == "--" && side == &commands.compare.baseline_argv) {
          side = &commands.compare.candidate_argv;
          continue;
        }
        side->emplace_back(argv[j]);
      }
      argc = i;
      break;
    }
  }
  if (names_unknown_arguments(app, argc, argv)) return usage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : usage;
  }
  if (!commands.action) return usage;
  // Every subcommand's entry: what escapes it (a library's exception, a bug) ends the process
  // with a message that names the command, never with an unexplained abort.
  const std::string name =
      app.get_subcommands().empty() ? std::string() : app.get_subcommands().front()->get_name();
  try {
    return commands.action();
  } catch (const std::exception& e) {
    std::cerr << "kernelwatch " << name << ": " << e.what() << '\n';
  } catch (...) {
    std::cerr << "kernelwatch " << name << ": an unknown error ended the command\n";
  }
  return compare ? kCompareRefused : 1;  // compare's 1 means "slower"
}

}  // namespace kernelwatch::daemon
