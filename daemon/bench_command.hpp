// `kernelwatch bench`: runs kernel cases through the measurement harness and prints a table, or
// the kernelindex records as JSON; --db stores them. Composition code over kernels and storage.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store_commands.hpp"

namespace kernelwatch::daemon {

struct BenchOptions {
  std::string kernel;
  std::string pass;
  std::string provider = "all";
  std::string backend = "auto";
  std::optional<std::int64_t> rows;
  std::optional<std::int64_t> hidden;
  std::optional<std::int64_t> tokens;
  std::optional<std::int64_t> vocab;
  std::string dtype = "fp32";
  std::int64_t warmup_ms = 25;
  std::int64_t rep_ms = 100;
  std::uint64_t seed = 1;
  std::filesystem::path db;  // empty: do not store
  // --runner liger-bench: Liger's and PyTorch's own benchmarks through liger_bench.py instead of
  // the harness (provider liger/torch/huggingface or all; --workload labels, default the
  // founding workload; --backend, --rows.. --seed do not apply). Without --runner, --workload
  // labels of the kernel replace the shape flags (--rows, --hidden, --tokens, --vocab).
  std::string runner;                  // "": the in-process harness
  std::string python = "python3";      // the interpreter of a venv with torch, triton, liger-kernel
  std::filesystem::path script;        // empty: the installed or source tree's liger_bench.py
  std::vector<std::string> workloads;  // labels like tokens16384-vocab65536-fp32
  std::string timeout = "10m";
  // An RFC 3339 instant every run is recorded as observed at (a daemon running a case on another
  // GPU in a child passes its own clock's reading); "": each run's wall-clock instant.
  std::string observed_at;
  OutputFormat format = OutputFormat::Table;
};

int run_bench(const BenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
