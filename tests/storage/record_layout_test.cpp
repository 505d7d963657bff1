// How schema version 8 cuts a record into documents, a template and per-run values, and puts it
// back: the same JSON value (number kinds included, so the same text), whatever the record holds.
#include "storage/detail/record_layout.hpp"

#include <gtest/gtest.h>

#include "core/time.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage::layout {
namespace {

using nlohmann::json;

json fixture_json(const char* name) {
  return json::parse(testing::read_file(testing::fixture(name)));
}

// The columns a stored run of this record has (as prepare_run fills them).
RunColumns columns_of(const json& record) {
  const json& spec = record["run"]["spec"];
  RunColumns columns;
  columns.run_status = spec.value("status", "");
  columns.observed_at_ns =
      core::parse_timestamp(spec["observedAt"].get<std::string>())->time_since_epoch().count();
  if (spec.contains("timing")) columns.median_ns = spec["timing"]["latencyNs"]["median"];
  columns.external_id = spec.contains("sourceNative")
                            ? spec["sourceNative"].value("externalId", std::string())
                            : std::string();
  if (spec.contains("implementationDigest")) {
    columns.implementation_digest = spec["implementationDigest"].get<std::string>();
  }
  const json& labels = record["run"]["metadata"].value("labels", json::object());
  for (const char* name :
       {"implementation_version", "kernelwatch_version", "version", "liger_version"}) {
    if (labels.contains(name)) {
      columns.implementation_version = labels[name].get<std::string>();
      break;
    }
  }
  return columns;
}

// Splits and joins `record` through text, as the store keeps the parts, and checks it is the same
// JSON and the same text.
void round_trip(const json& record) {
  RunColumns columns = columns_of(record);
  const auto split = split_record(record, columns);
  ASSERT_TRUE(split.has_value());
  ASSERT_TRUE(split->run.has_value());
  json joined = split->extra ? json::parse(split->extra->dump()) : json::object();
  auto run = join_run(json::parse(split->run->shape.dump()), split->run->values, columns);
  ASSERT_TRUE(run) << run.error().message;
  joined["run"] = *run;
  for (auto [member, part] :
       {std::pair{"protocol", &split->protocol}, std::pair{"environment", &split->environment},
        std::pair{"workload", &split->workload},
        std::pair{"implementation", &split->implementation}}) {
    if (*part) joined[member] = json::parse((*part)->dump());
  }
  EXPECT_EQ(joined, record);
  EXPECT_EQ(joined.dump(2), record.dump(2));
}

TEST(RecordLayout, AFixtureSplitsIntoASharedTemplateAndComesBackTheSame) {
  const json record = fixture_json("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json");
  round_trip(record);
  RunColumns columns = columns_of(record);
  const auto split = split_record(record, columns);
  ASSERT_TRUE(split);
  EXPECT_EQ(columns.name, record["run"]["metadata"]["name"]);
  // The template has none of what a run has of its own: its time, numbers, ids, version.
  const std::string shape = split->run->shape.dump();
  for (const char* own : {"2025-07-17T18:18:16.000Z", "577632", "575347", "0.5776320099830627",
                          "liger-layer-norm-backward", "sha256:77931b83", "0.6.0"}) {
    EXPECT_EQ(shape.find(own), std::string::npos) << own << " in " << shape;
  }
  EXPECT_EQ(split->run->values,
            "[575347,579891,0.5753471970558167,0.5776320099830627,0.5798912048339844]");
  // Another run of the key (other time, numbers, release) has the same template.
  json later = record;
  later["run"]["spec"]["observedAt"] = "2025-07-18T18:18:16.000Z";
  later["run"]["spec"]["timing"]["latencyNs"]["median"] = 600000;
  later["run"]["metadata"]["labels"]["liger_version"] = "0.6.1";
  later["run"]["metadata"]["name"] = "another-name";
  RunColumns later_columns = columns_of(later);
  const auto later_split = split_record(later, later_columns);
  ASSERT_TRUE(later_split);
  EXPECT_EQ(later_split->run->shape, split->run->shape);
}

TEST(RecordLayout, EveryKindOfLeafComesBackWithItsKind) {
  json record = fixture_json("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json");
  json& run = record["run"];
  run["spec"]["sourceNative"]["metrics"]["integral_double"] = 2.0;
  run["spec"]["sourceNative"]["metrics"]["negative"] = -3;
  run["spec"]["sourceNative"]["metrics"]["tiny"] = 1e-300;
  run["spec"]["timing"]["samples"] = 1234;
  run["metadata"]["description"] = "why, \"quoted\"\nand a newline";
  run["metadata"]["labels"]["kernelwatch_version"] = "9.9.9";  // read before liger_version
  run["unknown"] = {{"flag", true}, {"nothing", nullptr}, {"list", {1, "two", 3.5}}};
  record["workload"] = {{"apiVersion", "kernelindex.dev/v1alpha1"},
                        {"kind", "WorkloadCase"},
                        {"spec", {{"axes", {{"n", 4096}}}}}};
  record["implementation"] = {{"apiVersion", "kernelindex.dev/v1alpha1"},
                              {"kind", "ImplementationRevision"},
                              {"spec", {{"language", "triton"}}}};
  record["x-extra"] = {{"kept", "as it came"}};
  round_trip(record);
  RunColumns columns = columns_of(record);
  EXPECT_EQ(columns.implementation_version, "9.9.9");
  const auto split = split_record(record, columns);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->extra, (json{{"x-extra", {{"kept", "as it came"}}}}));
}

TEST(RecordLayout, AFailedRunWithoutTimingOrExternalIdComesBack) {
  json record = fixture_json("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json");
  json& spec = record["run"]["spec"];
  spec["status"] = "runtime_error";
  spec.erase("timing");
  spec.erase("measurements");
  spec["sourceNative"].erase("externalId");
  record["run"]["metadata"]["description"] = "runner exited with status 1";
  round_trip(record);
}

TEST(RecordLayout, ARecordThatDisagreesWithItsColumnsIsKeptWhole) {
  const json record = fixture_json("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json");
  for (auto change : {+[](RunColumns& c) { c.run_status = "revoked"; },
                      +[](RunColumns& c) { c.observed_at_ns += 1; },
                      +[](RunColumns& c) { c.median_ns = *c.median_ns + 1; },
                      +[](RunColumns& c) { c.median_ns.reset(); },
                      +[](RunColumns& c) { c.external_id = "other"; },
                      +[](RunColumns& c) { c.implementation_digest = "sha256:other"; },
                      +[](RunColumns& c) { c.implementation_version = "other"; }}) {
    RunColumns columns = columns_of(record);
    change(columns);
    EXPECT_FALSE(split_record(record, columns).has_value());
  }
  RunColumns columns = columns_of(record);
  EXPECT_FALSE(split_record(json::array(), columns).has_value());
}

TEST(RecordLayout, AMedianThatIsNotAnIntegerIsAValueNotAColumn) {
  json record = fixture_json("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json");
  record["run"]["spec"]["timing"]["latencyNs"]["median"] = 23379841.0;
  RunColumns columns = columns_of(record);
  columns.median_ns = 23379841;
  const auto split = split_record(record, columns);
  ASSERT_TRUE(split);
  auto run = join_run(json::parse(split->run->shape.dump()), split->run->values, columns);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->dump(), record["run"].dump());
}

TEST(RecordLayout, DamagedValuesAreAnErrorNotAWrongRecord) {
  const json record = fixture_json("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json");
  RunColumns columns = columns_of(record);
  const auto split = split_record(record, columns);
  ASSERT_TRUE(split);
  const json& shape = split->run->shape;
  for (const char* values : {"[1,2]", "[1,2,3,4,5,6,7]", "not json", "{\"a\":1}"}) {
    const auto run = join_run(shape, values, columns);
    ASSERT_FALSE(run) << values;
    EXPECT_EQ(run.error().code, core::ErrorCode::ParseError);
  }
}

TEST(RecordLayout, ASourceRowKeepsItsKeysColumnsOnceAndItsOwnPerRow) {
  const json source = {{"format", "liger-csv"},
                       {"file", "weekly.csv"},
                       {"line", 17},
                       {"row",
                        {{"kernel_name", "layer_norm"},
                         {"kernel_provider", "liger"},
                         {"gpu_name", "NVIDIA H100 80GB HBM3"},
                         {"liger_version", "0.6.0"},
                         {"timestamp", "2025-07-17 18:18:16"},
                         {"y_value_50", "0.57"},
                         {"ghpages_order", "3"}}}};
  const SplitDocument split = split_source(source);
  EXPECT_EQ(split.values, R"([17,"3","0.6.0","2025-07-17 18:18:16","0.57"])");
  EXPECT_EQ(split.shape["row"]["gpu_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(split.shape["file"], "weekly.csv");
  const auto joined = join_source(json::parse(split.shape.dump()), split.values);
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->dump(), source.dump());
}

}  // namespace
}  // namespace kernelwatch::storage::layout
