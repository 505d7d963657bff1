#pragma once
// The kernelindex record the daemon's end-to-end tests post (POST /api/v1/runs): one run of a
// synthetic key on an H100, valid by the public schemas, with honest digests. One builder for
// every e2e file, so a change of what POST accepts is made once.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/time.hpp"

namespace kernelwatch::testing {

struct PostedRun {
  core::Timestamp observed{};
  // The median as sent: a number of ns, or whatever a hostile test sends instead.
  nlohmann::json median_ns = 1'000'000;
  std::string workload = "synthetic-e2e";
  std::string provider = "posted";
  std::string source = "e2e-test";  // sourceNative.source
  bool spread = true;               // p20/p80 measurements at -/+0.05% of the median
};

// Benchmark synthetic/forward, environment nvidia-h100-80gb-hbm3, protocol e2e-protocol.
[[nodiscard]] nlohmann::json posted_record(const PostedRun& run);

}  // namespace kernelwatch::testing
