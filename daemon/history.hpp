// Stored history as the detectors replay it: every key's labels, and each stored run as an
// observation, streamed in observedAt order by the run store. Shared by the engine's rebuild,
// `kernelwatch backtest` and the evaluation programs. Composition code over storage and detectors.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/alert.hpp"
#include "detectors/observation.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::daemon {

// A stored run as detector input.
[[nodiscard]] detectors::Observation observation_of(const storage::RunSummary& run);

// Every key's labels by its row id.
[[nodiscard]] core::Result<std::map<std::int64_t, core::KeyLabels>> key_labels_by_id(
    const storage::RunStore& runs);

// Every stored run grouped by key (the evaluation programs read whole histories).
[[nodiscard]] core::Result<std::vector<detectors::KeyHistory>> load_key_histories(
    const storage::RunStore& runs);

}  // namespace kernelwatch::daemon
