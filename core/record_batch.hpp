// A batch of kernelindex records as a client posts it (POST /api/v1/runs): one record or an
// array, every one checked before any is stored. The JSON limits (depth, numbers) apply first;
// then each record against the public kernelindex schemas (core/kernelindex_schema.hpp), its
// fields, its comparability key, and its date against the receiver's clock.
// Plain C++; no I/O, no clock reads (`now` is the caller's).
#pragma once

#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/record.hpp"
#include "core/run.hpp"
#include "core/time.hpp"

namespace kernelwatch::core {

// The most records one batch may carry.
inline constexpr std::size_t kMaxBatchRecords = 10000;

// The runs of `body` (each record with its key, derived here once), or the first reason it is
// refused, worded for the client ("body is not JSON (byte 7): ...", "record 2: run.spec.status:
// missing", "record 0: run.spec.observedAt 2030-01-01T00:00:00.000Z is more than 5 minutes after
// the receiver's clock (...)").
[[nodiscard]] Result<std::vector<Run>> parse_record_batch(std::string_view body, Timestamp now);

}  // namespace kernelwatch::core
