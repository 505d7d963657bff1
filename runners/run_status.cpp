#include "runners/run_status.hpp"

#include "core/record.hpp"
#include "runners/child_process.hpp"

namespace kernelwatch::runners {

core::RunStatus public_status(RunVerdict verdict, std::string_view reason) noexcept {
  switch (verdict) {
    case RunVerdict::Passed:
      return core::RunStatus::Passed;
    case RunVerdict::TimedOut:
      return core::RunStatus::Timeout;
    case RunVerdict::Inconclusive:
      return core::RunStatus::IncompleteEvidence;
    case RunVerdict::Failed:
      break;
  }
  return core::status_for_failure_reason(reason);
}

void set_status(nlohmann::json& record, RunVerdict verdict, std::string_view reason) {
  nlohmann::json& run = record["run"];
  run["spec"]["status"] = std::string(core::to_string(public_status(verdict, reason)));
  run["spec"].erase("statusReason");  // the form before the public schemas
  if (verdict == RunVerdict::Passed) {
    if (run.contains("metadata")) run["metadata"].erase("description");
    return;
  }
  run["metadata"]["description"] =
      readable_line(reason.empty() ? "no reason given" : reason, kMaxReasonBytes);
}

}  // namespace kernelwatch::runners
