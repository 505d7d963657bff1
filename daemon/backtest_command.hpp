// `kernelwatch backtest`: replays the stored history of every key through the detectors and
// prints the alerts they would have raised. Composition code over storage and detectors.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "daemon/store_commands.hpp"
#include "detectors/backtest.hpp"

namespace kernelwatch::daemon {

struct BacktestCommandOptions {
  std::filesystem::path db;
  std::string confirm = "next";
  detectors::KeyFilter filter;
  OutputFormat format = OutputFormat::Table;
};

int run_backtest(const BacktestCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
