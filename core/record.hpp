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

// The largest latency a record may carry, in ns: 2^53 - 1 (about 104 days), the public schema's
// maximum (JavaScript's largest safe integer), below which a double holds every integer exactly,
// so a median or a p20/p80 measurement never changes on its way through the store. Larger values
// are refused, never wrapped.
inline constexpr std::int64_t kMaxLatencyNs = (std::int64_t{1} << 53) - 1;

// A run's status in kernelindex's public vocabulary (BenchmarkRun.spec.status).
enum class RunStatus {
  Passed,
  IncorrectShape,
  IncorrectDtype,
  IncorrectNumerical,  // kernelwatch: the correctness gate failed
  CompileError,
  RuntimeError,      // kernelwatch: the kernel or the benchmark program failed
  Timeout,           // kernelwatch: a benchmark program still running after its timeout
  ResourceExceeded,  // kernelwatch: out of host or device memory
  InvalidReference,
  PolicyViolation,
  SuspectedRewardHack,
  IncompleteEvidence,  // kernelwatch: timed, but on a throttled or shared GPU (inconclusive)
  Revoked,
};

// What a status means to detection: a timed run that counts, a failure (the key alerts that it
// fails), or a run that proves nothing either way (never judged, never an alert).
enum class RunOutcome { Passed, Failed, Inconclusive };

[[nodiscard]] std::string_view to_string(RunStatus status) noexcept;
[[nodiscard]] std::string_view to_string(RunOutcome outcome) noexcept;
// The thirteen public names. kernelwatch's own earlier exports wrote "failed" and
// "inconclusive": records are upgraded before they are parsed (core/legacy_record.hpp), so those
// two are refused here with the list.
[[nodiscard]] Result<RunStatus> parse_run_status(std::string_view text);
[[nodiscard]] Result<RunOutcome> parse_run_outcome(std::string_view text);
[[nodiscard]] RunOutcome outcome_of(RunStatus status) noexcept;
[[nodiscard]] inline bool is_failure(RunStatus status) noexcept {
  return outcome_of(status) == RunOutcome::Failed;
}
// The public status of a run kernelwatch could not time because of `code` (an out-of-memory
// error is resource_exceeded, a timeout timeout, anything else runtime_error).
[[nodiscard]] RunStatus status_for_error(ErrorCode code) noexcept;
// The public status of a failure kernelwatch recorded as "failed" with this reason before it
// used the public vocabulary: incorrect_numerical for its correctness gate, timeout for a runner
// killed at its timeout, resource_exceeded for memory, runtime_error for the rest.
[[nodiscard]] RunStatus status_for_failure_reason(std::string_view reason) noexcept;

// The longest reason a record carries (metadata.description's limit in the public schema).
inline constexpr std::size_t kMaxStatusReasonBytes = 2000;

struct Measurement {
  std::string metric;     // "latency"
  std::string statistic;  // "p20", "p80", "min", ...
  std::string unit;       // "ns"
  double value = 0;
};

// sourceNative.source of Liger-Kernel's benchmark CSV rows (runners/liger_csv) and of the
// kernelindex records exported from them: weekly CI on whichever host it got.
inline constexpr std::string_view kLigerCiSource = "liger-kernel-bench";

struct SourceNative {
  std::string source;  // "liger-kernel-bench", "kernelwatch"
  nlohmann::json metrics = nlohmann::json::object();
  std::string benchmark;    // "layer_norm/backward"
  std::string external_id;  // "<benchmark>/<provider>/<environment>/<workload>/<timestamp>"
};

struct Metadata {
  std::string name;
  std::string title;
  std::string description;  // a run that did not pass: why (its status_reason)
  std::map<std::string, std::string> labels;
};

struct BenchmarkRun {
  RunStatus status = RunStatus::Passed;
  // Why a run did not pass, one readable line (written as metadata.description, the one place the
  // public schema gives free text); "" for a passed run.
  std::string status_reason;
  std::optional<std::chrono::nanoseconds>
      median;  // or the mean, when primary; absent only on failed runs
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
  [[nodiscard]] RunOutcome outcome() const noexcept { return outcome_of(status); }
};

// The architecture an ExecutionEnvironment names when nobody knows it (the schema requires one):
// a GPU name kernelwatch has no table entry for, a runner that failed before it saw its device.
inline constexpr std::string_view kUnknownArchitecture = "unknown";

struct Hardware {
  std::string vendor;        // "nvidia"
  std::string product;       // "NVIDIA H100"
  std::string form_factor;   // "80GB HBM3"
  std::string architecture;  // "sm_90"

  bool operator==(const Hardware&) const = default;
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

// One run with the protocol and environment it was measured under, and the workload and
// implementation documents where the source had them (kernelindex exports of separate
// documents); those two are kept as they came, null when absent.
struct Record {
  BenchmarkRun run;
  BenchmarkProtocol protocol;
  ExecutionEnvironment environment;
  nlohmann::json workload;        // a WorkloadCase document, or null
  nlohmann::json implementation;  // an ImplementationRevision document, or null
  nlohmann::json document = nlohmann::json::object();  // top level as parsed (unknown keys kept)
};

// The implementation version a record names, from the first of its labels
// implementation_version, kernelwatch_version, version, liger_version; "" when none.
[[nodiscard]] std::string implementation_version(const Metadata& metadata);

// Parses one record object ({"run":..., "protocol":..., "environment":...}, optionally
// "workload" and "implementation"). Messages name the field path
// ("run.spec.timing.latencyNs.median: expected an integer number of ns"). Records in the forms
// kernelwatch wrote before it followed the public schemas are upgraded first
// (core/legacy_record.hpp); nothing is checked against the schemas here (parse_checked_record).
[[nodiscard]] Result<Record> parse_record(const nlohmann::json& value);

// parse_record() of input kernelwatch did not write (an import, a POST): the upgraded record's
// documents are first checked against the public schemas, the first violation named by its path
// ("run.metadata.name: \"Bad Name\" does not match ^[a-z0-9][a-z0-9._-]*$").
[[nodiscard]] Result<Record> parse_checked_record(const nlohmann::json& value);

// Emits the record: the kept document with every typed field written over it.
[[nodiscard]] nlohmann::json to_json(const Record& record);

}  // namespace kernelwatch::core
