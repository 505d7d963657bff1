#include "detectors/judge.hpp"

#include <map>
#include <utility>

#include "core/key.hpp"

namespace kernelwatch::detectors {

std::string_view to_string(Confirmation confirmation) noexcept {
  switch (confirmation) {
    case Confirmation::NotNeeded:
      return "not_needed";
    case Confirmation::Unconfirmed:
      return "unconfirmed";
    case Confirmation::Confirmed:
      return "confirmed";
    case Confirmation::NotConfirmed:
      return "not_confirmed";
  }
  return "not_needed";
}

namespace {

// What the confirmation adds to the deciding run's explanation.
std::string confirmation_note(const CandidateJudgement& j, std::size_t runs) {
  const std::string run_word = "candidate run " + std::to_string(j.deciding_run + 1);
  switch (j.confirmation) {
    case Confirmation::Unconfirmed:
      return runs == 1 ? std::string(
                             "one candidate run, judged alone (a second run would "
                             "confirm it as the daemon's rerun does)")
                       : "unconfirmed: " + run_word +
                             " breached and no candidate run followed it (the daemon would "
                             "rerun it to confirm)";
    case Confirmation::Confirmed:
      return "confirmed by " + run_word;
    case Confirmation::NotConfirmed:
      return "a candidate run breached and " + run_word + " did not confirm it";
    case Confirmation::NotNeeded:
      break;
  }
  return {};
}

}  // namespace

CandidateJudgement judge_candidate(const KeyDetector* state, const DetectorParameters& parameters,
                                   std::span<const Observation> runs) {
  CandidateJudgement out;
  // A copy: the caller's state never sees the candidates.
  KeyDetector detector = state != nullptr ? *state : KeyDetector(parameters);
  // Two or more runs: each breach confirmed by the next, as the daemon's rerun. One run: judged
  // alone, as the daemon judges a posted run (which it cannot rerun), with the tighter tail.
  const bool alone = runs.size() == 1;
  detector.set_confirm(alone ? ConfirmPolicy::None : ConfirmPolicy::Next);
  bool breached = false;
  std::optional<std::size_t> confirmed;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Observation run = runs[i];
    if (const auto& last = detector.last_observed(); last && run.observed_at <= *last) {
      run.observed_at = *last + std::chrono::nanoseconds(1);
    }
    KeyStep step = detector.observe(run);
    breached = breached || step.role == RunRole::Pending;
    if (step.role == RunRole::Confirmed && !confirmed) confirmed = i;
    out.steps.push_back(std::move(step));
  }
  if (out.steps.empty()) return out;
  out.deciding_run = confirmed.value_or(out.steps.size() - 1);
  const KeyStep& deciding = out.steps[out.deciding_run];
  out.verdict = deciding.verdict;
  out.role = deciding.role;
  if (alone) {
    if (out.verdict.breach()) {
      out.confirmation = Confirmation::Unconfirmed;
      if (deciding.trigger) out.verdict.explanation = deciding.trigger->explanation;
    }
  } else if (confirmed) {
    out.confirmation = Confirmation::Confirmed;
    if (deciding.trigger) out.verdict.explanation = deciding.trigger->explanation;
  } else if (deciding.role == RunRole::Pending) {
    out.confirmation = Confirmation::Unconfirmed;
  } else if (breached) {
    out.confirmation = Confirmation::NotConfirmed;
  }
  out.explanation = out.verdict.explanation;
  const std::string note = confirmation_note(out, runs.size());
  if (!note.empty()) out.explanation += (out.explanation.empty() ? "" : "; ") + note;
  return out;
}

core::Result<std::vector<CandidateCase>> candidate_cases(std::span<const core::Record> records) {
  std::vector<CandidateCase> cases;
  std::map<std::string, std::size_t> by_identity;
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto key = core::key_of(records[i]);
    if (!key) {
      return core::fail(key.error().code,
                        "record " + std::to_string(i) + ": " + key.error().message);
    }
    KeyLabels labels = key_labels(*key);
    const auto [it, fresh] = by_identity.emplace(labels.identity(), cases.size());
    if (fresh) {
      cases.emplace_back();
      cases.back().key = std::move(labels);
    }
    CandidateCase& c = cases[it->second];
    c.records.push_back(i);
    c.runs.push_back(
        observation_from_record(records[i], core::implementation_version(records[i].run.metadata)));
  }
  return cases;
}

void judge_case(const Watch& watch, const DetectorParameters& parameters, CandidateCase& c) {
  const Watch::KeyView* view = watch.find(c.key.identity());
  c.known = view != nullptr && view->monitor != nullptr;
  const KeyDetector* state = c.known ? &view->monitor->detector() : nullptr;
  if (c.known) c.open_alert = view->monitor->open_alert();
  c.judgement = judge_candidate(state, parameters, c.runs);
}

}  // namespace kernelwatch::detectors
