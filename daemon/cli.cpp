#include "daemon/cli.hpp"

#include <iostream>

#include <CLI/CLI.hpp>

#include "daemon/store_commands.hpp"

#ifndef KERNELWATCH_VERSION
#define KERNELWATCH_VERSION "0.0.0-dev"
#endif

namespace kernelwatch::daemon {

int run_cli(int argc, char** argv) {
  CLI::App app{
      "kernelwatch: regression detection for GPU kernels (TVD and LayerNorm).\n"
      "Stores kernelindex.dev run records in SQLite and compares each new median with the\n"
      "historic p20/p80 band of its comparability key.",
      "kernelwatch"};
  app.set_version_flag("--version", KERNELWATCH_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 failure, 2 bad usage. `kernelwatch SUBCOMMAND --help` for "
      "details.\n");

  std::function<int()> action;

  ImportOptions import_options;
  auto* import = app.add_subcommand(
      "import",
      "Import kernelindex JSON records (one, an array, or JSON Lines) and Liger benchmark CSV.\n"
      "One import is one transaction: an invalid record aborts it and changes nothing.");
  import->add_option("--db", import_options.db, "SQLite database file (created when missing)")
      ->required();
  import->add_option("paths", import_options.inputs, "Files to import (.json, .jsonl, .csv)")
      ->required();
  import->add_flag("--skip-invalid", import_options.skip_invalid,
                   "Import the valid records and list the invalid ones instead of aborting");
  import->callback([&] { action = [&] { return run_import(import_options, std::cout, std::cerr);
};
}  // namespace kernelwatch::daemon
);

std::filesystem::path keys_db;
bool keys_json = false;
auto* keys = app.add_subcommand(
    "keys", "List every comparability key with its run count and first/last run");
keys->add_option("--db", keys_db, "SQLite database file")->required();
keys->add_flag("--json", keys_json, "Print a JSON array instead of a table");
keys->callback([&] {
  action = [&] {
    return run_keys(keys_db, keys_json ? OutputFormat::Json : OutputFormat::Table, std::cout,
                    std::cerr);
  };
});

HistoryOptions history_options;
history_options.filter.limit = 100;
bool history_json = false;
auto* history = app.add_subcommand(
    "history",
    "Print stored runs, newest first; --json prints kernelindex records that `import` accepts");
history->add_option("--db", history_options.db, "SQLite database file")->required();
history->add_option("--benchmark", history_options.filter.benchmark,
                    "Only this benchmark, e.g. tvd/backward");
history->add_option("--provider", history_options.filter.provider,
                    "Only this provider, e.g. liger");
history->add_option("--workload", history_options.filter.workload,
                    "Only this workload, e.g. hidden16384-rows4096-fp32");
history->add_option("--environment", history_options.filter.environment,
                    "Only this environment, e.g. nvidia-h100-80gb-hbm3");
history->add_option("--limit", history_options.filter.limit, "At most N runs; 0 for all")
    ->capture_default_str();
history->add_flag("--json", history_json, "Print a JSON array of kernelindex records");
history->callback([&] {
  history_options.format = history_json ? OutputFormat::Json : OutputFormat::Table;
  action = [&] { return run_history(history_options, std::cout, std::cerr); };
});

try {
  app.parse(argc, argv);
} catch (const CLI::ParseError& e) {
  const int code = app.exit(e);
  return code == 0 ? 0 : 2;
}
return action ? action() : 2;
}

}  // namespace kernelwatch::daemon
