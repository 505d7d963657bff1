// `kernelwatch compare --against URL|DB CANDIDATE [CANDIDATE2]`: candidate runs judged against the
// learned band of each key without storing them and without paging: through a running daemon's
// POST /api/v1/judge (its live state), or against a database replayed read-only through replay/
// (what the daemon would have at its start). Both judge with detectors/judge.hpp; the answer's
// JSON form (judge_answer) is the API's, and it is printed through compare's report (table,
// Markdown, JSON, JUnit) with compare's exit codes. Composition code: core, detectors, storage,
// replay, runners (candidate files), config, Beast (HTTP).
#pragma once

#include <iosfwd>
#include <span>

#include <nlohmann/json.hpp>

#include "core/record.hpp"
#include "core/run.hpp"
#include "daemon/compare_command.hpp"
#include "detectors/judge.hpp"

namespace kernelwatch::daemon {

// The judged cases as POST /api/v1/judge answers them: {"stored": 0, "cases": [...]}; a case per
// key: its labels and digest, `known` (the key has history), `runs` (candidate runs), the deciding
// run's `median` (ns), `verdict` (in_band, regression, improvement, insufficient_data,
// inconclusive), `role`, `confirmation`, `band` {lower, upper, center} and `baselineRuns` where
// there is one, `relativeChange`, `explanation`, and the key's `openAlert` short id (or null).
[[nodiscard]] nlohmann::json judge_answer(std::span<const detectors::CandidateCase> cases,
                                          std::span<const core::Run> runs);

// compare's report of an answer: a row per case; regression -> slower, improvement -> faster,
// in band -> same when the change from the centre is within the case's threshold (`threshold`,
// or the first of `rules` matching its id), ambiguous beyond it (the band is too wide to tell a
// change of the threshold's size); the rest ambiguous (a new key, too few runs, inconclusive), a
// failed candidate run -> failed. Malformed answers are an error.
[[nodiscard]] core::Result<CompareReport> judged_report(const nlohmann::json& answer,
                                                        bool fail_on_ambiguous, double threshold,
                                                        const std::vector<ThresholdRule>& rules);

// The --against form of compare: run_compare() calls it with the parsed threshold and rules.
int run_judge(const CompareCommandOptions& options, double threshold,
              const std::vector<ThresholdRule>& rules, std::ostream& out, std::ostream& err);

}  // namespace kernelwatch::daemon
