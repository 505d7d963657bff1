#include "core/kernelindex_schema.hpp"

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;
using testing::read_file;

std::filesystem::path example(const std::string& name) {
  return std::filesystem::path(KW_SOURCE_DIR) / "third_party/kernelindex/examples" / name;
}

json example_json(const std::string& name) {
  return json::parse(read_file(example(name)));
}

// The first violation's "path: message", or "" when the document is valid.
std::string first_problem(const json& document) {
  const auto valid = validate_document(document);
  return valid ? std::string() : valid.error().message;
}

TEST(KernelindexSchema, EveryKeywordAndPatternOfTheEmbeddedSchemasIsUnderstood) {
  const auto unsupported = unsupported_schema_features();
  EXPECT_TRUE(unsupported.empty()) << unsupported.front();
}

TEST(KernelindexSchema, ThePublishersExamplesAreValid) {
  for (const char* name :
       {"benchmark-run.json", "benchmark-protocol.json", "execution-environment.json",
        "workload-case.json", "implementation-revision.json"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(first_problem(example_json(name)), "");
  }
}

TEST(KernelindexSchema, TheSeedRecordsAreValid) {
  for (const char* name : {"layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json",
                           "tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json"}) {
    SCOPED_TRACE(name);
    const json record = json::parse(read_file(testing::fixture(name)));
    for (const char* member : {"run", "protocol", "environment"}) {
      EXPECT_EQ(first_problem(record[member]), "") << member;
    }
  }
}

struct Violation {
  const char* pointer;  // where the bad value goes, as a JSON pointer into the example run
  json value;           // null: remove the field
  const char* expected;
};

TEST(KernelindexSchema, EachKindOfViolationNamesItsField) {
  const json run = example_json("benchmark-run.json");
  const Violation cases[] = {
      {"/spec/status", "failed",
       "spec.status: \"failed\" is not one of passed, incorrect_shape, incorrect_dtype"},
      {"/spec/statusReason", "why",
       "spec.statusReason: is not a field of the schema (allowed here:"},
      {"/metadata/name", "Bad Name",
       "metadata.name: \"Bad Name\" does not match ^[a-z0-9][a-z0-9._-]*$"},
      {"/metadata/labels",
       {{"backendName", "cpu"}},
       "metadata.labels.backendName: the name \"backendName\" does not match ^[a-z][a-z0-9_]*$"},
      {"/metadata/labels", {{"backend", 3}}, "metadata.labels.backend: expected a string, got 3"},
      {"/spec/sourceNative",
       {{"source", "kw"}, {"metrics", {{"backend", "cpu"}}}},
       "spec.sourceNative.metrics.backend: expected a number, got \"cpu\""},
      {"/spec/measurements",
       json::array(
           {{{"metric", "repetitions"}, {"unit", "1"}, {"statistic", "count"}, {"value", 5}}}),
       "spec.measurements[0].unit: \"1\" does not match ^[a-z][a-z0-9_]*$"},
      {"/spec/timing/latencyNs/median", -1,
       "spec.timing.latencyNs.median: matches none of its allowed forms (-1 is below the minimum "
       "0; expected a string, got -1)"},
      {"/spec/timing/samples", 0, "spec.timing.samples: 0 must be greater than 0"},
      {"/spec/timing/samples", 2.5, "spec.timing.samples: expected an integer, got 2.5"},
      {"/spec/observedAt", nullptr, "spec.observedAt: missing (a required field)"},
      {"/spec/observedAt", "2026-02-29T00:00:00Z", "spec.observedAt: \"2026-02-29T00:00:00Z\""},
      {"/spec/observedAt", "1900-02-29T00:00:00Z", "does not match"},
      {"/spec/observedAt", "2026-08-01T12:00:00+02:00", "does not match"},
      {"/spec/observedAt", "2026-08-01 12:00:00Z", "does not match"},
      {"/spec/environmentDigest", "sha256:ABC", "spec.environmentDigest: \"sha256:ABC\""},
      {"/kind", "Benchmark",
       "kind: \"Benchmark\" is not a kernelindex v1alpha1 kind (BenchmarkRun, BenchmarkProtocol"},
      {"/apiVersion", "kernelindex.dev/v1", "apiVersion: must be \"kernelindex.dev/v1alpha1\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.pointer);
    json doc = run;
    const json::json_pointer pointer(c.pointer);
    if (c.value.is_null()) {
      doc[pointer.parent_pointer()].erase(pointer.back());
    } else {
      doc[pointer] = c.value;
    }
    EXPECT_NE(first_problem(doc).find(c.expected), std::string::npos) << first_problem(doc);
  }
}

TEST(KernelindexSchema, ValidFormsOfThePatternsAreAccepted) {
  json run = example_json("benchmark-run.json");
  for (const char* text : {"2024-02-29T00:00:00Z", "2000-02-29T23:59:59.123456Z",
                           "1999-12-31T23:59Z", "0000-02-29T00:00:00Z"}) {
    run["spec"]["observedAt"] = text;
    EXPECT_EQ(first_problem(run), "") << text;
  }
  for (const char* text : {"12.5us", "3 ms", "1\xc2\xb5s", "7s", "40ns"}) {
    run["spec"]["timing"]["latencyNs"]["median"] = text;
    EXPECT_EQ(first_problem(run), "") << text;
  }
  for (const char* text : {"1.ms", "ms", "5 minutes", "-3ms", "3  ms"}) {
    run["spec"]["timing"]["latencyNs"]["median"] = text;
    EXPECT_NE(first_problem(run), "") << text;
  }
}

TEST(KernelindexSchema, LengthsCountCharactersNotBytes) {
  json run = example_json("benchmark-run.json");
  // 200 characters of two bytes each: at the limit, valid; one more is not.
  std::string title;
  for (int i = 0; i < 200; ++i) title += "\xc2\xb5";
  run["metadata"]["title"] = title;
  EXPECT_EQ(first_problem(run), "");
  run["metadata"]["title"] = title + "x";
  EXPECT_NE(first_problem(run).find("metadata.title: is 201 characters long, at most 200"),
            std::string::npos);
}

TEST(KernelindexSchema, AVeryLongNameIsRefusedByItsLengthWithoutMatchingIt) {
  json run = example_json("benchmark-run.json");
  run["metadata"]["name"] = std::string(5'000'000, 'a');
  EXPECT_NE(first_problem(run).find("metadata.name: is 5000000 characters long"),
            std::string::npos);
  // A label name has no length limit: a long valid one is matched in linear time.
  run = example_json("benchmark-run.json");
  run["metadata"]["labels"] = {{std::string(5'000'000, 'a'), "x"}};
  EXPECT_EQ(first_problem(run), "");
}

TEST(KernelindexSchema, AllProblemsAreCountedInTheMessage) {
  json run = example_json("benchmark-run.json");
  run["spec"]["status"] = "failed";
  run["spec"]["statusReason"] = "x";
  run["metadata"]["name"] = "X";
  const std::string problem = first_problem(run);
  EXPECT_NE(problem.find("(and 2 more problems against the BenchmarkRun schema)"),
            std::string::npos)
      << problem;
  EXPECT_EQ(schema_violations(run, DocumentKind::BenchmarkRun).size(), 3u);
}

TEST(KernelindexSchema, AnInvalidDocumentNamesItsPlaceInTheRecord) {
  json run = example_json("benchmark-run.json");
  run["spec"]["status"] = "failed";
  const auto valid = validate_document(run, "run");
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message.rfind("run.spec.status: ", 0), 0u) << valid.error().message;
}

}  // namespace
}  // namespace kernelwatch::core
