// Records in the forms kernelwatch wrote before it followed the public kernelindex schemas
// (databases up to schema version 6, `history --json` and `bench --json` of 0.1.0), rewritten
// into the forms it writes now, so old exports still import and stored runs migrate into the
// keys they had. Only those exact forms are touched; anything else is left for the schema check
// to name. Plain C++ and nlohmann/json; no I/O.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kernelwatch::core {

// Whether `record` ({run, protocol, environment}) holds one of the old forms: status "failed" or
// "inconclusive", spec.statusReason, or (from kernelwatch's own sources "kernelwatch" and
// "kernelwatch-liger-bench") camelCase or text metrics, the unit "1", software fields outside
// the schema, or the old kernelwatch protocol.
[[nodiscard]] bool is_legacy_record(const nlohmann::json& record);

// Rewrites the old forms in place; returns whether anything changed. Idempotent.
//  - status "failed" + statusReason -> the public status the reason says
//    (status_for_failure_reason()), "inconclusive" -> incomplete_evidence; the reason moves to
//    run.metadata.description;
//  - metrics camelCase -> snake_case, text metrics dropped (their value is a label already);
//    the repetition count "measurement" -> timing.samples;
//  - environment software: per-run GPU samples (before/after) -> run metrics
//    (sm_clock_mhz_before, ...), GPU UUID and index -> run labels, memory -> hardware.memoryBytes,
//    CUDA runtime -> cudaToolkit, torch -> framework, triton/liger_kernel/python -> libraries;
//  - the old kernelwatch protocol -> own_protocol_spec() of the same settings (same key).
// The run's environmentDigest and protocolDigest are recomputed for the documents it now carries.
bool upgrade_legacy_record(nlohmann::json& record);

// "smClockMHz" -> "sm_clock_mhz", "achievedGBps" -> "achieved_gbps".
[[nodiscard]] std::string snake_case(std::string_view name);

}  // namespace kernelwatch::core
