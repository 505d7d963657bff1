// The CLI subcommands that work on a database file: import, keys, history.
// Composition code: uses storage and core, prints to the streams it is given.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "storage/run_store.hpp"

namespace kernelwatch::daemon {

enum class OutputFormat { Table, Json };

struct ImportOptions {
  std::filesystem::path db;
  std::vector<std::filesystem::path> inputs;
  bool skip_invalid = false;
};

struct HistoryOptions {
  std::filesystem::path db;
  storage::RunFilter filter;
  OutputFormat format = OutputFormat::Table;
};

// A key with its run count and first/last run, as `keys --json` and GET /api/v1/keys print it.
[[nodiscard]] nlohmann::json to_json(const storage::KeySummary& summary);

// Each returns the process exit code (0 success, 1 failure) after printing.
int run_import(const ImportOptions& options, std::ostream& out, std::ostream& err);
int run_keys(const std::filesystem::path& db, OutputFormat format, std::ostream& out,
             std::ostream& err);
int run_history(const HistoryOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
