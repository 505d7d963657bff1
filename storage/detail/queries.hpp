// Storage-private SQL shared by the store and its tests (the tests check its query plan).
// Plain constants; no SQLite types.
#pragma once

namespace kernelwatch::storage::queries {

// One key's newest N runs: must walk the (key_id, observed_at_ns) index backwards.
inline constexpr const char* kNewestRunIds =
    "SELECT id FROM runs WHERE key_id = ?1 ORDER BY observed_at_ns DESC LIMIT ?2";

}  // namespace kernelwatch::storage::queries
