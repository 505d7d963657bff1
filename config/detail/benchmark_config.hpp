// The `benchmarks` and `bench` sections of the config file (config.cpp reads the rest).
#pragma once

#include <vector>

#include "config/config.hpp"
#include "config/detail/reader.hpp"

namespace kernelwatch::config::detail {

// Reads the `benchmarks` array: each entry, and no entry listed twice.
Status read_benchmarks(const Reader& reader, const JsonField& field,
                       std::vector<BenchmarkConfig>& out);

// Reads the `bench` object: the timing policy of kernelwatch's own kernels.
Status read_bench(const JsonField& field, kernels::TimingPolicy& out);

}  // namespace kernelwatch::config::detail
