// How a run of an external program ended, in the words every source of this module uses, and the
// one function that writes it into a record document in the form core reads (its status and its
// reason, made a readable line whatever bytes the program wrote). Level 2: core/ and nlohmann.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/record.hpp"

namespace kernelwatch::runners {

enum class RunVerdict {
  Passed,
  Failed,        // the program or its output failed: a failed run with the reason
  TimedOut,      // still running at its timeout, killed
  Inconclusive,  // timed, but the GPU was throttled or shared
};

// The longest reason a run carries, in bytes.
inline constexpr std::size_t kMaxReasonBytes = 1000;

// The public status (kernelindex's vocabulary) of a verdict: a timeout is `timeout`, an
// inconclusive run `incomplete_evidence`, a failure what core::status_for_failure_reason names.
[[nodiscard]] core::RunStatus public_status(RunVerdict verdict, std::string_view reason) noexcept;

// Sets run.spec.status and the reason, run.metadata.description (cut to kMaxReasonBytes, invalid
// UTF-8 and control characters replaced), of a {run, protocol, environment} document; a passed
// run has no reason.
void set_status(nlohmann::json& record, RunVerdict verdict, std::string_view reason);

}  // namespace kernelwatch::runners
