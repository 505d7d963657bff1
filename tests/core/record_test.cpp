#include "core/record.hpp"

#include <gtest/gtest.h>

#include "core/kernelindex_schema.hpp"
#include "core/key.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;
using testing::fixture;
using testing::read_file;

const char* const kFixtures[] = {
    "layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json",
    "tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json",
};

TEST(RecordTest, FixturesRoundTripWithoutLoss) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const json original = json::parse(read_file(fixture(name)));
    auto record = parse_record(original);
    ASSERT_TRUE(record) << record.error().message;
    const json emitted = to_json(*record);
    EXPECT_EQ(emitted, original) << "diff: " << json::diff(original, emitted).dump();
    auto again = parse_record(json::parse(emitted.dump()));
    ASSERT_TRUE(again);
    EXPECT_EQ(to_json(*again), original);
  }
}

TEST(RecordTest, TypedFieldsOfTheTvdFixture) {
  auto record = parse_record(json::parse(read_file(fixture(kFixtures[1]))));
  ASSERT_TRUE(record);
  const BenchmarkRun& run = record->run;
  EXPECT_EQ(run.status, RunStatus::Passed);
  ASSERT_TRUE(run.median);
  EXPECT_EQ(run.median->count(), 23379841);
  EXPECT_EQ(run.latency("p20")->count(), 23379386);
  EXPECT_EQ(run.latency("p80")->count(), 23381268);
  EXPECT_FALSE(run.latency("p99"));
  EXPECT_EQ(format_timestamp(run.observed_at), "2026-03-03T23:02:57.000Z");
  EXPECT_EQ(run.source_native.benchmark, "tvd/backward");
  EXPECT_EQ(run.metadata.labels.at("liger_version"), "0.7.0");
  EXPECT_EQ(record->environment.hardware.product, "NVIDIA H100");
  EXPECT_EQ(record->environment.hardware.form_factor, "80GB HBM3");
  EXPECT_EQ(record->protocol.metadata.name, "liger-bench-do-bench-backward");
}

TEST(RecordTest, UnknownFieldsAtEveryLevelArePreserved) {
  json doc = json::parse(read_file(fixture(kFixtures[0])));
  doc["extraTop"] = {{"a", 1}};
  doc["run"]["spec"]["futureField"] = "kept";
  doc["run"]["spec"]["measurements"][0]["confidence"] = 0.95;
  doc["run"]["spec"]["sourceNative"]["note"] = "x";
  doc["environment"]["spec"]["hardware"]["memoryBytes"] = 85899345920LL;
  doc["environment"]["spec"]["software"] = {{"driver", "550.54"}};
  doc["protocol"]["metadata"]["annotations"] = {{"k", "v"}};
  auto record = parse_record(doc);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(to_json(*record), doc);
}

TEST(RecordTest, EditedTypedFieldsAreEmitted) {
  auto record = parse_record(json::parse(read_file(fixture(kFixtures[0]))));
  ASSERT_TRUE(record);
  record->run.median = std::chrono::nanoseconds{600000};
  record->run.status = RunStatus::IncompleteEvidence;
  record->run.status_reason = "SM clock 900 MHz is under 75% of its maximum 1980 MHz";
  const json out = to_json(*record);
  EXPECT_EQ(out["run"]["spec"]["timing"]["latencyNs"]["median"], 600000);
  EXPECT_EQ(out["run"]["spec"]["status"], "incomplete_evidence");
  // The reason is where the public schema has free text: the run's description.
  EXPECT_EQ(out["run"]["metadata"]["description"], record->run.status_reason);
  EXPECT_FALSE(out["run"]["spec"].contains("statusReason"));
}

struct BadCase {
  const char* pointer;
  json value;
  const char* expected;
};

TEST(RecordTest, MalformedFieldsNameTheirPath) {
  const json base = json::parse(read_file(fixture(kFixtures[1])));
  const BadCase cases[] = {
      {"/run/spec/timing/latencyNs/median", "fast",
       "run.spec.timing.latencyNs.median: expected an integer number of ns or a duration"},
      {"/run/spec/timing/latencyNs/median", -5,
       "run.spec.timing.latencyNs.median: expected a non-negative integer"},
      {"/run/spec/timing/latencyNs/median", 1.5,
       "run.spec.timing.latencyNs.median: expected a non-negative integer"},
      {"/run/spec/status", "great", "run.spec.status: \"great\" is not a kernelindex run status"},
      {"/run/spec/observedAt", "yesterday", "run.spec.observedAt: timestamp \"yesterday\""},
      {"/run/kind", "Other", "run.kind: expected \"BenchmarkRun\""},
      {"/run/apiVersion", "v2", "run.apiVersion: \"v2\" is not kernelindex.dev/v1alpha1"},
      {"/run/spec/measurements", json::object(), "run.spec.measurements: expected an array"},
      {"/run/spec/measurements/0/value", "x", "run.spec.measurements[0].value: expected a number"},
      {"/environment/spec/hardware", 7, "environment.spec.hardware: expected an object"},
      {"/run/metadata/labels/liger_version", 7,
       "run.metadata.labels.liger_version: expected a string"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.pointer);
    json doc = base;
    doc[json::json_pointer(c.pointer)] = c.value;
    auto record = parse_record(doc);
    ASSERT_FALSE(record);
    EXPECT_EQ(record.error().code, ErrorCode::ParseError);
    EXPECT_NE(record.error().message.find(c.expected), std::string::npos) << record.error().message;
  }
}

TEST(RecordTest, MissingPartsAreNamed) {
  const json base = json::parse(read_file(fixture(kFixtures[1])));
  for (const char* part : {"run", "protocol", "environment"}) {
    json doc = base;
    doc.erase(part);
    auto record = parse_record(doc);
    ASSERT_FALSE(record);
    EXPECT_EQ(record.error().message, std::string(part) + ": missing");
  }
  json doc = base;
  doc["run"]["spec"]["timing"].erase("latencyNs");
  auto record = parse_record(doc);
  ASSERT_FALSE(record);
  EXPECT_EQ(record.error().message, "run.spec.timing.latencyNs: missing");
}

TEST(RecordTest, FailedRunMayHaveNoMedian) {
  json doc = json::parse(read_file(fixture(kFixtures[1])));
  doc["run"]["spec"]["status"] = "runtime_error";
  doc["run"]["spec"].erase("timing");
  auto record = parse_record(doc);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_FALSE(record->run.median);
  EXPECT_EQ(to_json(*record), doc);
}

}  // namespace
}  // namespace kernelwatch::core

namespace kernelwatch::core {
namespace {

// The public schema allows a latency as a duration text; it is read as the nearest ns.
TEST(RecordTest, LatenciesWrittenAsDurationTextsAreReadAsNanoseconds) {
  json doc = json::parse(testing::read_file(fixture(kFixtures[1])));
  const std::pair<const char*, std::int64_t> cases[] = {{"12.5us", 12500},    {"3 ms", 3000000},
                                                        {"1\xc2\xb5s", 1000}, {"7s", 7000000000},
                                                        {"40ns", 40},         {"0.0004ms", 400}};
  for (const auto& [text, ns] : cases) {
    doc["run"]["spec"]["timing"]["latencyNs"]["median"] = text;
    auto record = parse_record(doc);
    ASSERT_TRUE(record) << text << ": " << record.error().message;
    EXPECT_EQ(record->run.median, std::chrono::nanoseconds(ns)) << text;
  }
  for (const char* bad : {"1.ms", "fast", "3 minutes", "200000000s"}) {
    doc["run"]["spec"]["timing"]["latencyNs"]["median"] = bad;
    EXPECT_FALSE(parse_record(doc)) << bad;
  }
}

}  // namespace
}  // namespace kernelwatch::core

namespace kernelwatch::core {
namespace {

// Found by the fuzzers: a record missing its run (or with a member of another type) was checked
// against the schemas member by member and then read as if the run were there (an exception
// that ended the process: the daemon on a POST).
TEST(RecordTest, ACheckedRecordWithoutItsRunIsRefusedNotThrown) {
  json doc = json::parse(testing::read_file(fixture(kFixtures[1])));
  json without = doc;
  without.erase("run");
  auto refused = parse_checked_record(without);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "run: missing (a record has run, protocol and environment)");
  json null_run = doc;
  null_run["run"] = nullptr;
  refused = parse_checked_record(null_run);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "run: expected a kernelindex document (an object)");
  EXPECT_TRUE(parse_checked_record(doc));
}

TEST(RecordTest, AGpuNameOfAnyKindMakesASchemaVendorAndADocumentNameIsAlwaysValid) {
  EXPECT_EQ(hardware_from_gpu_name("NVIDIA H100 80GB HBM3").vendor, "nvidia");
  EXPECT_EQ(hardware_from_gpu_name("Nvid-ia H100").vendor, "nvid_ia");
  EXPECT_EQ(hardware_from_gpu_name("3dfx Voodoo").vendor, "v_3dfx");
  EXPECT_EQ(document_name("liger-layer-norm-backward-2025-07-17"),
            "liger-layer-norm-backward-2025-07-17");
  EXPECT_EQ(document_name("Some Run: #3"), "some-run-3");
  const std::string long_name = document_name(std::string(500, 'a'));
  EXPECT_EQ(long_name.size(), 200u);
  EXPECT_NE(long_name, document_name(std::string(499, 'a')));
}

}  // namespace
}  // namespace kernelwatch::core
