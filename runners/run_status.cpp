#include "runners/run_status.hpp"

#include "runners/child_process.hpp"

namespace kernelwatch::runners {

void set_status(nlohmann::json& record, RunVerdict verdict, std::string_view reason) {
  nlohmann::json& spec = record["run"]["spec"];
  switch (verdict) {
    case RunVerdict::Passed:
      spec["status"] = "passed";
      spec.erase("statusReason");
      return;
    case RunVerdict::Failed:
    case RunVerdict::TimedOut:
      spec["status"] = "failed";
      break;
    case RunVerdict::Inconclusive:
      spec["status"] = "inconclusive";
      break;
  }
  spec["statusReason"] =
      readable_line(reason.empty() ? "no reason given" : reason, kMaxReasonBytes);
}

}  // namespace kernelwatch::runners
