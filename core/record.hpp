// The kernelindex.dev v1alpha1 record: BenchmarkRun + BenchmarkProtocol + ExecutionEnvironment.
// Typed fields for what kernelwatch reads; the parsed document is kept so that emitting a
// record preserves every field it does not know. Uses nlohmann/json, no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/time.hpp"

namespace kernelwatch::core {

inline constexpr std::string_view kApiVersion = "kernelindex.dev/v1alpha1";

// The largest latency a record may carry, in ns: 2^53 (about 104 days), the largest integer a
// double holds exactly, so a median or a p20/p80 measurement never changes on its way through
// the store. Larger values are refused, never wrapped.
inline constexpr std::int64_t kMaxLatencyNs = std::int64_t{1} << 53;

enum class RunStatus { Passed, Failed, Inconclusive };

[[nodiscard]] std::string_view to_string(RunStatus status) noexcept;
[[nodiscard]] Result<RunStatus> parse_run_status(std::string_view text);

struct Measurement {
  std::string metric;     // "latency"
  std::string statistic;  // "p20", "p80", "min", ...
  std::string unit;       // "ns"
  double value = 0;
};

struct SourceNative {
  std::string source;  // "liger-kernel-bench", "kernelwatch"
  nlohmann::json metrics = nlohmann::json::object();
  std::string benchmark;    // "layer_norm/backward"
  std::string external_id;  // "<benchmark>/<provider>/<environment>/<workload>/<timestamp>"
};

struct Metadata {
  std::string name;
  std::string title;
  std::map<std::string, std::string> labels;
};

struct BenchmarkRun {
  RunStatus status = RunStatus::Passed;
  std::optional<std::chrono::nanoseconds> median;  // or the mean, when primary; absent: failed
  std::string primary_statistic = "median";
  Timestamp observed_at{};
  std::vector<Measurement> measurements;
  SourceNative source_native;
  std::string protocol_digest;
  std::string workload_digest;
  std::string environment_digest;
  std::string implementation_digest;
  Metadata metadata;
  nlohmann::json document = nlohmann::json::object();  // as parsed; unknown fields live here

  // The latency measurement with this statistic ("p20"), in ns.
  [[nodiscard]] std::optional<std::chrono::nanoseconds> latency(std::string_view statistic) const;
};

struct Hardware {
  std::string vendor;        // "nvidia"
  std::string product;       // "NVIDIA H100"
  std::string form_factor;   // "80GB HBM3"
  std::string architecture;  // "sm_90"
};

struct BenchmarkProtocol {
  Metadata metadata;
  nlohmann::json spec = nlohmann::json::object();
  nlohmann::json document = nlohmann::json::object();
};

struct ExecutionEnvironment {
  Hardware hardware;
  nlohmann::json software = nlohmann::json::object();  // driver, runtime, clocks: not identity
  Metadata metadata;
  nlohmann::json document = nlohmann::json::object();
};

// One run with the protocol and environment it was measured under.
struct Record {
  BenchmarkRun run;
  BenchmarkProtocol protocol;
  ExecutionEnvironment environment;
  nlohmann::json document = nlohmann::json::object();  // top level as parsed (unknown keys kept)
};

// The implementation version a record names, from the first of its labels
// implementation_version, kernelwatch_version, version, liger_version; "" when none.
[[nodiscard]] std::string implementation_version(const Metadata& metadata);

// Parses one record object ({"run":..., "protocol":..., "environment":...}). Messages name the
// field path ("run.spec.timing.latencyNs.median: expected an integer number of ns").
[[nodiscard]] Result<Record> parse_record(const nlohmann::json& value);

// Emits the record: the kept document with every typed field written over it.
[[nodiscard]] nlohmann::json to_json(const Record& record);

}  // namespace kernelwatch::core
