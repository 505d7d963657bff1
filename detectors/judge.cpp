#include "detectors/judge.hpp"

#include <algorithm>
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
                             " breached and no later candidate run confirmed or refuted it (the "
                             "daemon would rerun it)";
    case Confirmation::Confirmed:
      return "confirmed by " + run_word;
    case Confirmation::NotConfirmed:
      return "a candidate run breached and " + run_word + " did not confirm it (an outlier)";
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
  std::optional<std::size_t> first_breach;  // a run that breached and waited for the next
  std::optional<std::size_t> resolved;      // the run after which no breach was pending
  std::optional<std::size_t> triggered;     // the first run at which an alert would fire
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Observation run = runs[i];
    if (const auto& last = detector.last_observed(); last && run.observed_at <= *last) {
      run.observed_at = *last + std::chrono::nanoseconds(1);
    }
    const bool was_pending = detector.has_pending();
    KeyStep step = detector.observe(run);
    if (step.role == RunRole::Pending && !first_breach) first_breach = i;
    if (was_pending && !detector.has_pending() && !step.trigger && !resolved) resolved = i;
    // Any alert the daemon would raise: a confirmed step, a level that persists (its run may be
    // in band) or a drift (an accepted run).
    if (step.trigger && !triggered) triggered = i;
    out.steps.push_back(std::move(step));
  }
  if (out.steps.empty()) return out;
  out.deciding_run = triggered.value_or(out.steps.size() - 1);
  const KeyStep& deciding = out.steps[out.deciding_run];
  out.verdict = deciding.verdict;
  out.role = deciding.role;
  if (deciding.trigger) {
    // The alert's verdict: for a persistent level or a drift the run itself may be in band.
    const Trigger& t = *deciding.trigger;
    out.verdict = t.verdict;
    out.verdict.kind =
        t.direction == Direction::Improvement ? VerdictKind::Improvement : VerdictKind::Regression;
    out.verdict.explanation = t.explanation;
    out.confirmation = alone ? Confirmation::Unconfirmed : Confirmation::Confirmed;
    if (!alone && t.kind != AlertKind::Step) out.confirmation = Confirmation::NotNeeded;
  } else if (detector.has_pending()) {
    // A breach still waiting: the run after it was failed, inconclusive, or not yet enough to
    // say it was an outlier.
    out.confirmation = Confirmation::Unconfirmed;
    out.deciding_run = first_breach.value_or(out.deciding_run);
    out.verdict = out.steps[out.deciding_run].verdict;
    out.role = out.steps[out.deciding_run].role;
  } else if (first_breach) {
    out.confirmation = Confirmation::NotConfirmed;
    out.deciding_run = resolved.value_or(out.deciding_run);
  }
  out.explanation = out.verdict.explanation;
  const std::string note = confirmation_note(out, runs.size());
  if (!note.empty()) out.explanation += (out.explanation.empty() ? "" : "; ") + note;
  return out;
}

std::vector<CandidateCase> candidate_cases(std::span<const core::Run> runs) {
  std::vector<CandidateCase> cases;
  std::map<std::string, std::size_t> by_identity;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const core::Record& record = runs[i].record();
    KeyLabels labels = key_labels(runs[i]);
    const auto [it, fresh] = by_identity.emplace(labels.identity(), cases.size());
    if (fresh) {
      cases.emplace_back();
      cases.back().key = std::move(labels);
    }
    CandidateCase& c = cases[it->second];
    // The same run twice (one file given twice) never confirms itself.
    const std::string& id = record.run.source_native.external_id;
    if (!id.empty() && std::any_of(c.records.begin(), c.records.end(), [&](std::size_t j) {
          return runs[j].record().run.source_native.external_id == id;
        })) {
      ++c.duplicates;
      continue;
    }
    c.records.push_back(i);
    c.runs.push_back(
        observation_from_record(record, core::implementation_version(record.run.metadata)));
  }
  return cases;
}

void judge_case(const Watch& watch, const DetectorParameters& parameters, CandidateCase& c) {
  const Watch::KeyView* view = watch.find(c.key.identity());
  c.known = view != nullptr && view->monitor != nullptr;
  const KeyDetector* state = c.known ? &view->monitor->detector() : nullptr;
  if (c.known) c.open_alert = view->monitor->open_alert();
  c.judgement = judge_candidate(state, parameters, c.runs);
  if (c.duplicates > 0) {
    c.judgement.explanation += "; " + std::to_string(c.duplicates) +
                               " repeated candidate run(s) (same externalId) judged once";
  }
}

}  // namespace kernelwatch::detectors
