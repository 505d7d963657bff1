#include "core/legacy_record.hpp"

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/kernelwatch_protocol.hpp"
#include "core/key.hpp"
#include "core/record.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

// `history --json --limit 0` of a database kernelwatch 0.1.0 made (tests/data/legacy-0.1.0).
json export_010() {
  return json::parse(testing::read_file(std::filesystem::path(KW_SOURCE_DIR) /
                                        "tests/data/legacy-0.1.0/history-0.1.0.json"));
}

const json* find_run(const json& records, const std::string& source, const std::string& status) {
  for (const auto& r : records) {
    if (r["run"]["spec"]["sourceNative"].value("source", "") == source &&
        r["run"]["spec"]["status"] == status) {
      return &r;
    }
  }
  return nullptr;
}

TEST(LegacyRecord, EveryRecordKernelwatch010ExportedIsValidOnceUpgraded) {
  const json records = export_010();
  ASSERT_EQ(records.size(), 37u);
  std::size_t upgraded = 0;
  for (const auto& original : records) {
    json record = original;
    upgraded += upgrade_legacy_record(record) ? 1 : 0;
    for (const char* member : {"run", "protocol", "environment"}) {
      const auto valid = validate_document(record[member], member);
      EXPECT_TRUE(valid) << valid.error().message;
    }
    // Honest digests: each names the document the record carries.
    EXPECT_EQ(record["run"]["spec"]["environmentDigest"], document_digest(record["environment"]));
    EXPECT_EQ(record["run"]["spec"]["protocolDigest"], document_digest(record["protocol"]));
  }
  // The kernelwatch runs, the inconclusive one and the failed liger-bench run; the 32 imported
  // ones were valid already and are left alone.
  EXPECT_EQ(upgraded, 5u);
}

TEST(LegacyRecord, AnUpgradedRecordKeepsItsKey) {
  for (const auto& original : export_010()) {
    json record = original;
    upgrade_legacy_record(record);
    // The key of the old document as 0.1.0 derived it: its protocol spec's own identity.
    const json old_protocol = {{"apiVersion", kApiVersion},
                               {"kind", "BenchmarkProtocol"},
                               {"spec", original["protocol"]["spec"]}};
    auto key = key_of(*parse_record(record));
    ASSERT_TRUE(key) << key.error().message;
    EXPECT_EQ(key->protocol.digest, identity_digest(old_protocol));
    EXPECT_EQ(key->environment.digest,
              identity_digest(environment_identity(parse_record(original)->environment.hardware)));
  }
}

TEST(LegacyRecord, StatusesMapToThePublicVocabularyAndTheReasonStaysReadable) {
  const json records = export_010();
  const json* failed = find_run(records, "kernelwatch-liger-bench", "failed");
  ASSERT_NE(failed, nullptr);
  auto parsed = parse_record(*failed);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->run.status, RunStatus::RuntimeError);
  EXPECT_EQ(parsed->run.outcome(), RunOutcome::Failed);
  EXPECT_NE(parsed->run.status_reason.find("import failure: liger_bench: cannot import torch"),
            std::string::npos)
      << parsed->run.status_reason;

  const json* inconclusive = find_run(records, "kernelwatch", "inconclusive");
  ASSERT_NE(inconclusive, nullptr);
  parsed = parse_record(*inconclusive);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->run.status, RunStatus::IncompleteEvidence);
  EXPECT_EQ(parsed->run.outcome(), RunOutcome::Inconclusive);
  EXPECT_EQ(parsed->run.status_reason.rfind("SM clock 345 MHz is under 75%", 0), 0u);
  const json emitted = to_json(*parsed);
  EXPECT_EQ(emitted["run"]["metadata"]["description"], parsed->run.status_reason);
  EXPECT_FALSE(emitted["run"]["spec"].contains("statusReason"));
}

TEST(LegacyRecord, FailureReasonsChooseTheStatusThatSaysWhy) {
  EXPECT_EQ(status_for_failure_reason("correctness gate: y: relative error 0.3"),
            RunStatus::IncorrectNumerical);
  EXPECT_EQ(status_for_failure_reason("runner still running after its timeout of 10m: killed"),
            RunStatus::Timeout);
  EXPECT_EQ(status_for_failure_reason("CUDA error: out of memory"), RunStatus::ResourceExceeded);
  EXPECT_EQ(status_for_failure_reason("runner killed by signal 9"), RunStatus::RuntimeError);
  EXPECT_EQ(status_for_error(ErrorCode::OutOfMemory), RunStatus::ResourceExceeded);
  EXPECT_EQ(status_for_error(ErrorCode::DeviceError), RunStatus::RuntimeError);
}

TEST(LegacyRecord, OwnRunsMoveTheirFieldsWhereTheSchemaHasThem) {
  const json records = export_010();
  const json* run = find_run(records, "kernelwatch", "passed");
  ASSERT_NE(run, nullptr);
  json record = *run;
  ASSERT_TRUE(upgrade_legacy_record(record));
  const json& spec = record["run"]["spec"];
  const json& metrics = spec["sourceNative"]["metrics"];
  EXPECT_TRUE(metrics.contains("achieved_gbps"));
  EXPECT_TRUE(metrics.contains("bytes_moved"));
  EXPECT_TRUE(metrics.contains("host_logical_cores"));
  EXPECT_FALSE(metrics.contains("backend"));  // text: the label "backend" says it
  EXPECT_EQ(spec["timing"]["samples"], metrics["repetitions"]);
  for (const auto& m : spec["measurements"]) EXPECT_EQ(m["unit"], "ns");
  EXPECT_TRUE(record["environment"]["spec"]["software"].empty());
  EXPECT_GT(record["environment"]["spec"]["hardware"]["memoryBytes"].get<std::int64_t>(), 0);
  const auto settings = read_own_protocol(record["protocol"]["spec"]);
  ASSERT_TRUE(settings);
  EXPECT_EQ(settings->warmup_ms, 5);
  EXPECT_EQ(settings->repetition_ms, 10);
  const std::string benchmark = spec["sourceNative"]["benchmark"];
  EXPECT_EQ(settings->pass, benchmark.substr(benchmark.find('/') + 1));
}

TEST(LegacyRecord, TheUpgradeIsIdempotentAndLeavesOtherRecordsAlone) {
  for (const auto& original : export_010()) {
    json once = original;
    upgrade_legacy_record(once);
    json twice = once;
    EXPECT_FALSE(upgrade_legacy_record(twice));
    EXPECT_EQ(twice, once);
    EXPECT_FALSE(is_legacy_record(once));
  }
  // A foreign record with a statusReason-like field of its own source is not kernelwatch's.
  json foreign = export_010()[0];
  foreign["run"]["spec"]["sourceNative"]["source"] = "someone-else";
  foreign["run"]["spec"]["sourceNative"]["metrics"] = {{"camelCase", 1}};
  EXPECT_FALSE(is_legacy_record(foreign));
}

TEST(LegacyRecord, OwnProtocolSettingsRoundTripThroughBothForms) {
  OwnProtocolSettings s;
  s.harness = "kernelwatch-cuda-events";
  s.timer = "cuda_events";
  s.pass = "backward";
  s.warmup_ms = 30;
  s.repetition_ms = 250;
  s.min_repetitions = 12;
  s.max_repetitions = 5000;
  s.flush_bytes = 268435456;
  EXPECT_EQ(read_own_protocol(own_protocol_spec(s)), s);
  EXPECT_EQ(read_own_protocol(legacy_own_protocol_spec(s)), s);
  EXPECT_EQ(protocol_equivalence(own_protocol_spec(s)),
            protocol_equivalence(legacy_own_protocol_spec(s)));
  json protocol = {{"apiVersion", kApiVersion},
                   {"kind", "BenchmarkProtocol"},
                   {"metadata", {{"name", "kernelwatch-cuda-events-backward"}}},
                   {"spec", own_protocol_spec(s)}};
  EXPECT_TRUE(validate_document(protocol));
  // Another setting is another protocol; an edited document is nobody's own.
  OwnProtocolSettings other = s;
  other.repetition_ms = 100;
  EXPECT_NE(protocol_equivalence(own_protocol_spec(other)),
            protocol_equivalence(own_protocol_spec(s)));
  json edited = own_protocol_spec(s);
  edited["measurement"]["samples"] = 7;
  EXPECT_FALSE(read_own_protocol(edited));
}

TEST(LegacyRecord, SnakeCaseKeepsAcronymsTogether) {
  EXPECT_EQ(snake_case("smClockMHz"), "sm_clock_mhz");
  EXPECT_EQ(snake_case("achievedGBps"), "achieved_gbps");
  EXPECT_EQ(snake_case("bytesMoved"), "bytes_moved");
  EXPECT_EQ(snake_case("otherComputeProcesses"), "other_compute_processes");
  EXPECT_EQ(snake_case("ms_50"), "ms_50");
}

}  // namespace
}  // namespace kernelwatch::core
