// The harness's records (kernels/harness/record.cpp): every kind it writes is valid by the public
// kernelindex schemas, its digests name the documents it carries, and a run of the settings a
// kernelwatch 0.1.0 run had lands in that run's key.
#include "kernels/harness/record.hpp"

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/key.hpp"
#include "tests/support/conformance.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::kernels {
namespace {

using nlohmann::json;

RunContext cpu_context() {
  RunContext c;
  c.id = CaseId{KernelRef("tvd"), Pass::Forward, Provider::Fused, Backend::Cpu};
  c.spec.rows = 64;
  c.spec.cols = 512;
  c.policy.warmup = std::chrono::milliseconds(5);
  c.policy.repetitions = std::chrono::milliseconds(10);
  c.flush_bytes = 67108864;
  c.cpu = CpuInfo{"amd", "AMD EPYC", "x86_64", 2, 25275953152};
  c.build = BuildInfo{"0.2.0", "", "sha256:" + std::string(64, 'a')};
  c.observed_at = core::Timestamp(std::chrono::seconds(1748779200));  // 2025-06-01T12:00:00Z
  Timings t;
  for (int i = 0; i < 12; ++i) t.samples_ns.push_back(40000.0 + 1000.0 * i);
  t.warmup_runs = 3;
  c.timings = t;
  return c;
}

// A GPU case sampled on a GPU whose SM clock sat low: inconclusive.
RunContext gpu_context() {
  RunContext c = cpu_context();
  c.id.backend = Backend::Cuda;
  c.gpu = GpuInfo{0,
                  "NVIDIA H200",
                  "GPU-0d1f6f3c-5c2e-4f6e-9d55-2c1e0e6b7a11",
                  9,
                  0,
                  132,
                  150754820096,
                  62914560,
                  "570.86.15",
                  "13.0",
                  4800.0};
  c.before.sm_clock_mhz = 345;
  c.before.sm_clock_max_mhz = 1980;
  c.before.persistence_mode = true;
  c.before.power_w = 71.5;
  c.after = c.before;
  c.status = core::RunStatus::IncompleteEvidence;
  c.reason = "SM clock 345 MHz is under 75% of its maximum 1980 MHz";
  return c;
}

void expect_valid(const core::Record& record) {
  const json doc = core::to_json(record);
  for (const char* member : {"run", "protocol", "environment"}) {
    const auto valid = core::validate_document(doc[member], member);
    EXPECT_TRUE(valid) << valid.error().message;
  }
  EXPECT_EQ(doc["run"]["spec"]["environmentDigest"], core::document_digest(doc["environment"]));
  EXPECT_EQ(doc["run"]["spec"]["protocolDigest"], core::document_digest(doc["protocol"]));
}

TEST(HarnessRecord, EveryKindOfRunTheHarnessWritesIsValid) {
  std::vector<core::Record> records;
  records.push_back(make_record(cpu_context()));  // passed
  RunContext gate = cpu_context();
  gate.timings.reset();
  gate.status = core::RunStatus::IncorrectNumerical;
  gate.reason = "correctness gate: y: relative error 0.31 over the fp32 tolerance 1e-05";
  records.push_back(make_record(gate));
  RunContext memory = gate;
  memory.status = core::RunStatus::ResourceExceeded;
  memory.reason = "cudaMalloc: out of memory";
  records.push_back(make_record(memory));
  RunContext crashed = gate;
  crashed.status = core::RunStatus::RuntimeError;
  crashed.reason = "CUDA error: an illegal memory access was encountered";
  records.push_back(make_record(crashed));
  records.push_back(make_record(gpu_context()));  // incomplete_evidence
  json all = json::array();
  for (const auto& record : records) {
    SCOPED_TRACE(core::to_string(record.run.status));
    expect_valid(record);
    all.push_back(core::to_json(record));
  }
  EXPECT_EQ(records[1].run.status_reason, gate.reason);
  EXPECT_EQ(all[1]["run"]["metadata"]["description"], gate.reason);
  // What the GPU did during the run is the run's; the environment holds what the host is.
  const json& gpu = all[4];
  EXPECT_EQ(gpu["run"]["spec"]["sourceNative"]["metrics"]["sm_clock_mhz_before"], 345);
  EXPECT_EQ(gpu["run"]["spec"]["sourceNative"]["metrics"]["persistence_mode_after"], 1);
  EXPECT_EQ(gpu["run"]["metadata"]["labels"]["gpu_uuid"],
            "GPU-0d1f6f3c-5c2e-4f6e-9d55-2c1e0e6b7a11");
  EXPECT_EQ(gpu["environment"]["spec"]["software"],
            (json{{"driver", "570.86.15"}, {"cudaToolkit", "13.0"}}));
  EXPECT_EQ(gpu["environment"]["spec"]["hardware"]["memoryBytes"], 150754820096);
  EXPECT_EQ(all[0]["run"]["spec"]["timing"]["samples"], 12);

  KW_REQUIRE_JSONSCHEMA();
  kernelwatch::testing::TempDir dir;
  const auto checked = kernelwatch::testing::check_against_schemas(all, dir.path());
  EXPECT_TRUE(checked.valid) << checked.report;
}

TEST(HarnessRecord, TheEnvironmentDigestIsTheDocumentsNotTheKeysHardwareIdentity) {
  const core::Record record = make_record(gpu_context());
  const auto key = core::key_of(record);
  ASSERT_TRUE(key);
  EXPECT_EQ(record.run.environment_digest,
            core::document_digest(core::to_json(record)["environment"]));
  EXPECT_NE(record.run.environment_digest, key->environment.digest);
  EXPECT_EQ(key->environment.digest,
            core::identity_digest(core::environment_identity(record.environment.hardware)));
}

// The tvd/forward kernelwatch-fused CPU run that kernelwatch 0.1.0 stored (tests/data/legacy-0.1.0)
// and a run of the same settings made now share one key.
TEST(HarnessRecord, ARunOfTheSettingsOfA010RunLandsInItsKey) {
  const json history = json::parse(testing::read_file(
      std::filesystem::path(KW_SOURCE_DIR) / "tests/data/legacy-0.1.0/history-0.1.0.json"));
  const json* old_run = nullptr;
  for (const auto& r : history) {
    if (r["run"]["spec"]["sourceNative"]
            .value("externalId", "")
            .rfind("tvd/forward/kernelwatch-fused/amd-epyc/tokens64-vocab512-fp32/2025-06-01-12-",
                   0) == 0) {
      old_run = &r;
    }
  }
  ASSERT_NE(old_run, nullptr);
  ASSERT_EQ((*old_run)["protocol"]["spec"]["cache"]["flushBytes"], 67108864);
  const auto old_record = core::parse_record(*old_run);
  ASSERT_TRUE(old_record) << old_record.error().message;
  const auto old_key = core::key_of(*old_record);
  const auto new_key = core::key_of(make_record(cpu_context()));
  ASSERT_TRUE(old_key && new_key);
  EXPECT_EQ(new_key->digest(), old_key->digest()) << new_key->display();
  // A changed timing setting is another key, as it always was.
  RunContext longer = cpu_context();
  longer.policy.repetitions = std::chrono::milliseconds(100);
  EXPECT_NE(core::key_of(make_record(longer))->digest(), old_key->digest());
}

}  // namespace
}  // namespace kernelwatch::kernels
