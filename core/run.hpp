// A run as kernelwatch carries it: its kernelindex record and the comparability key derived from
// it, computed once where the run enters (a client's POST, a runner's producer, an import, a
// candidate for compare) and handed unchanged to storage, detection and delivery, so no later
// stage derives the key again or can see a key that is not its record's. Every source of runs
// returns this one value (as google/benchmark's reporters get one Run whatever the benchmark):
// what only some sources measure (repetitions, bandwidth) is its optional figures.
// Plain C++; no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/key.hpp"
#include "core/record.hpp"

namespace kernelwatch::core {

// What a source measured beside the record's latencies; 0 where it did not say (every source
// but the in-process harness of kernelwatch's own kernels, today).
struct RunFigures {
  std::int64_t repetitions = 0;  // timed repetitions
  std::int64_t bytes_moved = 0;
  double achieved_gbps = 0;
  double peak_gbps = 0;  // the device's bandwidth; 0 when unknown
};

class Run {
 public:
  // The run of `record`: its key derived (core::key_of), or why it has none (ParseError).
  [[nodiscard]] static Result<Run> of(Record record, RunFigures figures = {});

  [[nodiscard]] const Record& record() const { return record_; }
  [[nodiscard]] const ComparabilityKey& key() const { return key_; }
  // key().digest(), computed once.
  [[nodiscard]] const std::string& key_digest() const { return key_digest_; }
  [[nodiscard]] const RunFigures& figures() const { return figures_; }

 private:
  Run(Record record, ComparabilityKey key, RunFigures figures);

  Record record_;
  ComparabilityKey key_;
  std::string key_digest_;
  RunFigures figures_;
};

// The runs of `records`, in order; an error names the record ("record 2: ...", counted from 0)
// whose key cannot be derived.
[[nodiscard]] Result<std::vector<Run>> runs_of(std::span<const Record> records);

}  // namespace kernelwatch::core
