// `kernelwatch backtest`: the one replay of the stored history (replay/), printed as the alerts
// it raised. Composition code over config, storage and replay.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "daemon/store_commands.hpp"
#include "detectors/backtest.hpp"

namespace kernelwatch::daemon {

struct BacktestCommandOptions {
  std::filesystem::path db;
  // "judged": each run confirmed as the daemon judged it (imported runs by the next stored
  // run); "none" / "next": every run so.
  std::string confirm = "judged";
  std::filesystem::path config;  // its detector settings; empty: the defaults
  detectors::KeyFilter filter;
  OutputFormat format = OutputFormat::Table;
};

int run_backtest(const BacktestCommandOptions& options, std::ostream& out, std::ostream& err);

// The detector settings of `config` (the defaults when empty), or the error to print.
[[nodiscard]] core::Result<detectors::DetectorParameters> detector_parameters(
    const std::filesystem::path& config);

}  // namespace kernelwatch::daemon
