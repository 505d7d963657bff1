#include "daemon/history.hpp"

namespace kernelwatch::daemon {

detectors::Observation observation_of(const storage::RunSummary& run) {
  detectors::Observation o;
  o.external_id = run.external_id;
  o.observed_at = run.observed_at;
  o.status = run.status;
  o.median = run.median.value_or(std::chrono::nanoseconds{0});
  o.p20 = run.p20;
  o.p80 = run.p80;
  o.implementation_version = run.implementation_version;
  o.implementation_digest = run.implementation_digest;
  o.software = detectors::software_fields(run.software);
  o.status_reason = run.status_reason;
  return o;
}

core::Result<std::map<std::int64_t, core::KeyLabels>> key_labels_by_id(
    const storage::RunStore& runs) {
  std::map<std::int64_t, core::KeyLabels> labels;
  for (const auto& key : KW_TRY(runs.keys())) labels[key.id] = detectors::key_labels(key.key);
  return labels;
}

core::Result<std::vector<detectors::KeyHistory>> load_key_histories(const storage::RunStore& runs) {
  const auto labels = KW_TRY(key_labels_by_id(runs));
  std::map<std::int64_t, detectors::KeyHistory> by_key;
  KW_TRY(runs.for_each_in_time_order([&](const storage::RunSummary& run) -> core::Status {
    auto [it, inserted] = by_key.try_emplace(run.key_id);
    if (inserted) it->second.key = labels.at(run.key_id);
    it->second.runs.push_back(observation_of(run));
    return {};
  }));
  std::vector<detectors::KeyHistory> histories;
  histories.reserve(by_key.size());
  for (auto& [id, history] : by_key) histories.push_back(std::move(history));
  return histories;
}

}  // namespace kernelwatch::daemon
