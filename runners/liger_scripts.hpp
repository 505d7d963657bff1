// The liger-scripts runner: Liger-Kernel's own benchmark scripts (benchmark/scripts/
// benchmark_*.py of a checkout), every kernel, run with the host's Python exactly as Liger runs
// them. Each script appends its rows to ../data/all_benchmark_data.csv next to its utils.py
// (utils.update_benchmark_data_csv); those rows are read through the importer's own mapping
// (runners/liger_csv.hpp), so every rerun lands in the key of that kernel's imported history.
// The checkout is never written: each script runs from a copy of the checkout's benchmark/ folder
// in a fresh scratch directory (the checkout's other top-level entries linked beside it, so
// `sys.path` finds its test/ package), where the data file starts absent, with
// PYTHONDONTWRITEBYTECODE=1 (no __pycache__ in the checkout). A script cannot rerun one case: a
// breach is confirmed by the whole entry run again or by its next scheduled run (`confirm`).
// Level 2: core/, storage/ (the CSV mapping), kernels/ (GPU samples).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "kernels/harness/bench.hpp"
#include "runners/command.hpp"
#include "runners/liger_csv.hpp"

namespace kernelwatch::runners {

inline constexpr std::string_view kLigerScriptsRunner = "liger-scripts";
// sourceNative.source of its runs (the daemon's own runs: a breach awaits its confirmation).
inline constexpr std::string_view kLigerScriptsSource = "kernelwatch-liger-scripts";
// Where Liger's scripts are, relative to the checkout.
inline constexpr std::string_view kLigerScriptsFolder = "benchmark/scripts/";

struct LigerScriptsEntry {
  std::string name;                  // ^[a-z0-9][a-z0-9._-]*$: names the entry
  std::filesystem::path checkout;    // the Liger-Kernel checkout, absolute
  std::filesystem::path python;      // a path, or a name looked up in PATH
  std::vector<std::string> scripts;  // "benchmark/scripts/benchmark_rms_norm.py"; empty: all
  std::vector<std::string> args;     // given to every script ("--sweep-mode", "model_config")
  std::chrono::milliseconds timeout{std::chrono::hours(1)};  // each script
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};
  std::vector<std::pair<std::string, std::string>> env;  // on top of the minimal environment
  ConfirmMode confirm = ConfirmMode::Next;
  std::size_t max_data_bytes = 64 * 1024 * 1024;  // the CSV a script writes
  std::size_t max_copy_bytes = 64 * 1024 * 1024;  // the checkout's benchmark/ folder, copied

  [[nodiscard]] bool all() const { return scripts.empty(); }
};

// Every benchmark/scripts/benchmark_*.py of a checkout that runs as a program (it has an
// `if __name__ == "__main__"` block; benchmark_model_configs.py is a module), sorted, as
// "benchmark/scripts/<file>". NotFound when the folder is missing.
[[nodiscard]] core::Result<std::vector<std::string>> list_liger_scripts(
    const std::filesystem::path& checkout);

// What one execution of an entry produced.
struct LigerScriptsOutcome {
  std::vector<core::Record> runs;  // one per key, failed ones included (times: the records')
  std::string error;               // the first script that failed, and why ("" none)
  bool cancelled = false;          // the daemon stopped it: nothing to store
};

// The keys each script's last rows fell in (a later failure of the script is recorded in each).
using LigerScriptKeys = std::map<std::string, std::vector<LigerSpeedRow>>;

// Runs the entry's scripts once, one after the other (a failed script does not stop the rest).
// The environment is the importer's: the GPU each row names, checked against the daemon's probe
// when it found a GPU (a row claiming another GPU is a failed run on the probed one).
[[nodiscard]] LigerScriptsOutcome run_liger_scripts(const LigerScriptsEntry& entry,
                                                    const CommandContext& context,
                                                    LigerScriptKeys& known);

}  // namespace kernelwatch::runners
