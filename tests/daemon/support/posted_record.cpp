#include "tests/daemon/support/posted_record.hpp"

#include "tests/support/test_support.hpp"

namespace kernelwatch::testing {

using nlohmann::json;

json posted_record(const PostedRun& r) {
  const std::string id_time = core::format_id_timestamp(r.observed);
  json spec = {
      {"status", "passed"},
      {"timing", {{"latencyNs", {{"median", r.median_ns}}}, {"primaryStatistic", "median"}}},
      {"observedAt", core::format_timestamp(r.observed)},
      {"sourceNative",
       {{"source", r.source},
        {"benchmark", "synthetic/forward"},
        {"externalId", "synthetic/forward/" + r.provider + "/nvidia-h100-80gb-hbm3/" + r.workload +
                           "/" + id_time}}}};
  if (r.spread && r.median_ns.is_number_integer()) {
    const std::int64_t median = r.median_ns.get<std::int64_t>();
    spec["measurements"] = json::array({{{"metric", "latency"},
                                         {"statistic", "p20"},
                                         {"unit", "ns"},
                                         {"value", median - median / 2000}},
                                        {{"metric", "latency"},
                                         {"statistic", "p80"},
                                         {"unit", "ns"},
                                         {"value", median + median / 2000}}});
  }
  return with_digests(
      json{{"run",
            {{"apiVersion", "kernelindex.dev/v1alpha1"},
             {"kind", "BenchmarkRun"},
             {"spec", std::move(spec)},
             {"metadata",
              {{"name", r.source + "-" + r.provider + "-" + r.workload + "-" + id_time},
               {"labels", {{"provider", r.provider}, {"workload", r.workload}}}}}}},
           {"protocol",
            {{"apiVersion", "kernelindex.dev/v1alpha1"},
             {"kind", "BenchmarkProtocol"},
             {"metadata", {{"name", "e2e-protocol"}}},
             {"spec",
              {{"harness", {{"name", "e2e"}}},
               {"measurement", {{"timer", "cuda_events"}, {"primaryStatistic", "median"}}}}}}},
           {"environment",
            {{"apiVersion", "kernelindex.dev/v1alpha1"},
             {"kind", "ExecutionEnvironment"},
             {"metadata", {{"name", "test-nvidia-h100"}}},
             {"spec",
              {{"hardware",
                {{"vendor", "nvidia"},
                 {"product", "NVIDIA H100"},
                 {"formFactor", "80GB HBM3"},
                 {"architecture", "sm_90"}}},
               {"software", json::object()}}}}}});
}

}  // namespace kernelwatch::testing
