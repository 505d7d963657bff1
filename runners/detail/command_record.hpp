// The records of a `command` entry's runs (runners/command.cpp): the protocol (format, harness
// version, argv template, statistics), the environment from the daemon's probe, and the run with
// the statistics its format has. Internal to runners/.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "kernels/harness/bench.hpp"
#include "runners/command.hpp"
#include "runners/run_status.hpp"

namespace kernelwatch::runners::detail {

// What every run of one execution shares.
struct ExecutionFacts {
  const CommandEntry* entry = nullptr;
  const HostIdentity* host = nullptr;
  core::Timestamp observed{};
  std::string harness_version;
  std::string timer = "wall_clock";
  std::string statistics_note;
  std::string program_digest;  // sha256 of the program file ("" unreadable)
  std::vector<kernels::GpuSample> samples;
};

// The key labels of a result: benchmark "<entry>/<native name>" ('/' made '.'), provider from the
// entry, else the output's own, else the entry's name.
[[nodiscard]] std::string benchmark_label(const CommandEntry& entry, const std::string& native);
[[nodiscard]] std::string provider_label(const CommandEntry& entry, const std::string& native);

// The protocol of a result: a new key whenever the format, the harness's version, the argv
// template, the primary statistic or a native run setting changes.
[[nodiscard]] nlohmann::json command_protocol(const ExecutionFacts& facts,
                                              const NativeResult& result);
// The protocol of a failed execution that never produced a key.
[[nodiscard]] nlohmann::json failed_protocol(const ExecutionFacts& facts);

// One run of a result (passed, failed or inconclusive), and its key for the next execution.
[[nodiscard]] core::Result<core::Record> result_run(const ExecutionFacts& facts,
                                                             const NativeResult& result,
                                                             RunVerdict verdict,
                                                             const std::string& reason,
                                                             KnownKey& key);
// A failed run in a key the entry produced before.
[[nodiscard]] core::Result<core::Record> failed_run(const ExecutionFacts& facts,
                                                             const KnownKey& key,
                                                             RunVerdict verdict,
                                                             const std::string& reason);
// A kernelindex record the program printed: its own key, the daemon's environment, this
// runner's source and the entry's labels.
[[nodiscard]] core::Result<core::Record> printed_run(const ExecutionFacts& facts,
                                                              const core::Record& printed,
                                                              RunVerdict verdict,
                                                              const std::string& reason,
                                                              KnownKey& key);

}  // namespace kernelwatch::runners::detail
