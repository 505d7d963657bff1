// Detector input: one run of one comparability key as the detectors see it, and a key's history.
// Plain C++ over core types (core/record.hpp, core/key.hpp); the daemon and the backtest convert
// stored runs into these. No I/O.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "core/key.hpp"
#include "core/placement.hpp"
#include "core/record.hpp"
#include "core/run.hpp"
#include "core/time.hpp"

namespace kernelwatch::detectors {

struct Observation {
  std::string external_id;
  core::Timestamp observed_at{};
  core::RunStatus status = core::RunStatus::Passed;
  std::chrono::nanoseconds median{0};
  std::optional<std::chrono::nanoseconds> p20;  // absent: taken as the median
  std::optional<std::chrono::nanoseconds> p80;
  std::string implementation_version;  // "" when the source did not say
  std::string implementation_digest;
  // The software environment flattened to "name" -> "value" ("driver" -> "550.54.15"): not part
  // of the key, compared only to attribute a step.
  std::map<std::string, std::string> software;
  std::string status_reason;  // why a failed or inconclusive run was not timed ("" when none)
  // The host and GPU it ran on (run labels; empty when unknown), shared: copied with the run into
  // the key detector's window and recent runs, it is a pointer, not four strings.
  core::SharedPlacement placement;
  // The run comes from a history known to span hosts that it does not name (Liger-Kernel's CI:
  // rented machines behind one GPU name): a young key of such runs keeps the cross-host prior
  // (BandParameters::young_jitter). spans_unnamed_hosts() decides it from the run's source.
  bool unnamed_hosts = false;

  [[nodiscard]] std::chrono::nanoseconds p20_or_median() const { return p20.value_or(median); }
  [[nodiscard]] std::chrono::nanoseconds p80_or_median() const { return p80.value_or(median); }
  // Passed with a positive median: the only runs a detector may judge or learn from.
  [[nodiscard]] bool judgeable() const {
    return status == core::RunStatus::Passed && median.count() > 0;
  }
};

// The human labels of a comparability key (core/alert.hpp).
using core::KeyLabels;

// One key and every run of it, in any order (the backtest sorts by observed_at).
struct KeyHistory {
  KeyLabels key;
  std::vector<Observation> runs;
};

[[nodiscard]] KeyLabels key_labels(const core::ComparabilityKey& key);
// The labels of a run's key with the digest the run carries (not computed again).
[[nodiscard]] KeyLabels key_labels(const core::Run& run);

// Whether runs of this sourceNative.source that name no host come from several hosts:
// Liger-Kernel's benchmark CSV and the kernelindex records exported from it ("liger-kernel-bench"),
// whose weekly CI runs on whichever rented machine it gets. A closed list: every other source
// (kernelwatch's own runners, a team's tool posting runs) is taken to run where its runs say, or on
// one host.
[[nodiscard]] bool spans_unnamed_hosts(std::string_view source, const core::Placement& placement);

// A stored record as detector input: median, p20/p80 latencies, status, observedAt, externalId,
// implementation digest and the software environment (flattened, nested objects joined by '.').
// The software environment flattened to "name" -> "value" (nested objects joined by '.'; the
// schema's libraries by their own names, the framework by its name: "triton", "pytorch").
[[nodiscard]] std::map<std::string, std::string> software_fields(const nlohmann::json& software);

[[nodiscard]] Observation observation_from_record(const core::Record& record,
                                                  std::string_view implementation_version);

}  // namespace kernelwatch::detectors
