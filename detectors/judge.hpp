// Judging candidates without keeping them: what a key's detector would decide of a candidate run
// (or a run and its confirming reruns) as the key's next runs, on a copy of its state, so the
// daemon's live state, a replayed database and every later run are untouched. The one judging
// path of POST /api/v1/judge and `kernelwatch compare --against`. Pure; core and detectors/ only.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/record.hpp"
#include "core/run.hpp"
#include "detectors/key_detector.hpp"
#include "detectors/watch.hpp"

namespace kernelwatch::detectors {

// Whether a breach was confirmed the way the daemon confirms one (the next run of its key breaches
// the same band the same way; or a level that persists).
enum class Confirmation {
  NotNeeded,     // no breach
  Unconfirmed,   // the last candidate run breached and no candidate run followed it
  Confirmed,     // a candidate run confirmed the breach
  NotConfirmed,  // a candidate run breached and the one after it did not confirm it
};
[[nodiscard]] std::string_view to_string(Confirmation confirmation) noexcept;

struct CandidateJudgement {
  Verdict verdict;  // of the deciding run: the confirming one, else the last one
  RunRole role = RunRole::Ignored;
  Confirmation confirmation = Confirmation::NotNeeded;
  std::size_t deciding_run = 0;  // index into the candidate runs
  std::vector<KeyStep> steps;    // each candidate run as the detector took it, in order
  std::string explanation;       // the verdict's, and what the confirmation says
};

// The candidate runs of one key judged in order as its next runs by a copy of `state` (null: a key
// without history, judged by a fresh detector with `parameters`), each breach confirmed by the
// next candidate run (ConfirmPolicy::Next, as the daemon's rerun); a single run is judged alone
// (ConfirmPolicy::None, as a posted run). A run dated before the key's newest run is judged just
// after it.
[[nodiscard]] CandidateJudgement judge_candidate(const KeyDetector* state,
                                                 const DetectorParameters& parameters,
                                                 std::span<const Observation> runs);

// The candidates of one key.
struct CandidateCase {
  KeyLabels key;                     // with its digest
  std::vector<std::size_t> records;  // indices of its runs in the input, in order
  std::vector<Observation> runs;     // one per input run
  bool known = false;                // the watch holds the key (false: a new key)
  std::size_t duplicates = 0;        // records of a run already among them (same externalId)
  std::optional<Alert> open_alert;   // the key's open step or drift alert, if any
  CandidateJudgement judgement;
};

// Runs grouped by key in order of first appearance, each key's runs in their order.
[[nodiscard]] std::vector<CandidateCase> candidate_cases(std::span<const core::Run> runs);

// judge_candidate() of the case against the key's state in `watch` (its parameters for a key the
// watch does not hold); fills known, open_alert and judgement. Changes nothing in `watch`.
void judge_case(const Watch& watch, const DetectorParameters& parameters, CandidateCase& c);

}  // namespace kernelwatch::detectors
