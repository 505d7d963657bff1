// The BenchmarkProtocol of kernelwatch's own harness: the document it writes (valid by the public
// schema), the form it wrote before it followed the schema, and the one settings type both are
// made from, so an old export, a migrated database and a new run of the same timing settings
// land in one comparability key. Plain C++ and nlohmann/json; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kernelwatch::core {

// What a kernelwatch protocol says, field for field.
struct OwnProtocolSettings {
  std::string harness;  // "kernelwatch-cuda-events" or "kernelwatch-cpu-steady-clock"
  std::string timer;    // "cuda_events" or "steady_clock"
  std::string pass;     // "forward", "backward", "full"
  std::int64_t warmup_ms = 25;
  std::int64_t repetition_ms = 100;
  std::int64_t min_repetitions = 10;
  std::int64_t max_repetitions = 10000;
  std::int64_t flush_bytes = 0;  // the buffer read before each repetition

  friend bool operator==(const OwnProtocolSettings&, const OwnProtocolSettings&) = default;
};

// The protocol's spec as kernelwatch writes it: harness, measurement (timer, synchronisation,
// warm-up, quantile rule), correctness reference and comparability notes that spell out the
// repetition rule and the cache flush, so two settings never share a document.
[[nodiscard]] nlohmann::json own_protocol_spec(const OwnProtocolSettings& settings);

// The spec kernelwatch 0.1 wrote (fields the public schema does not have: timedPass, repetition,
// cache, measurement.statistics, measurement.quantiles). Keys made then are digests of it.
[[nodiscard]] nlohmann::json legacy_own_protocol_spec(const OwnProtocolSettings& settings);

// The settings of a spec in either form, read exactly: nullopt unless the spec is one that
// own_protocol_spec() or legacy_own_protocol_spec() writes for those settings.
[[nodiscard]] std::optional<OwnProtocolSettings> read_own_protocol(const nlohmann::json& spec);

// The protocol's part of a comparability key: for kernelwatch's own protocols the identity of the
// legacy form (so every key keeps its digest whichever form its runs carry), for any other the
// identity of the document itself. Not the document's kernelindex digest (document_digest()).
[[nodiscard]] std::string protocol_equivalence(const nlohmann::json& spec);

}  // namespace kernelwatch::core
