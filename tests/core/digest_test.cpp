#include "core/digest.hpp"

#include <gtest/gtest.h>

namespace kernelwatch::core {
namespace {

TEST(DigestTest, Sha256KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DigestTest, CanonicalJsonSortsKeysAndDropsWhitespace) {
  const auto a = nlohmann::json::parse(R"({"b": 1, "a": {"d": [1, 2], "c": "x"}})");
  EXPECT_EQ(canonical_json(a), R"({"a":{"c":"x","d":[1,2]},"b":1})");
  const auto b = nlohmann::json::parse(R"({"a":{"c":"x","d":[1,2]},"b":1})");
  EXPECT_EQ(digest_of(a), digest_of(b));
  EXPECT_TRUE(is_digest(digest_of(a)));
}

TEST(DigestTest, DocumentDigestIgnoresMetadata) {
  auto doc = nlohmann::json::parse(
      R"({"apiVersion":"v","kind":"K","spec":{"x":1},"metadata":{"name":"n"}})");
  const std::string d = document_digest(doc);
  doc["metadata"]["name"] = "other";
  EXPECT_EQ(document_digest(doc), d);
  doc["spec"]["x"] = 2;
  EXPECT_NE(document_digest(doc), d);
}

// RFC 8785 appendix B: IEEE doubles as ECMAScript prints them.
TEST(JcsTest, NumbersArePrintedAsEcmascriptPrintsThem) {
  const std::pair<double, const char*> cases[] = {
      {0.0, "0"},
      {-0.0, "0"},
      {1.0, "1"},
      {1e-6, "0.000001"},
      {1e-7, "1e-7"},
      {1e21, "1e+21"},
      {1e20, "100000000000000000000"},
      {123456789012345680000.0, "123456789012345680000"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {-1.7976931348623157e308, "-1.7976931348623157e+308"},
      {9007199254740992.0, "9007199254740992"},
      {9007199254740994.0, "9007199254740994"},
      {295147905179352830000.0, "295147905179352830000"},
      {0.000001, "0.000001"},
      {0.5753471970558167, "0.5753471970558167"},
      {4.50, "4.5"},
      {2e-3, "0.002"},
      {-1e-7, "-1e-7"},
      {333333333.3333333, "333333333.3333333"},
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(ecmascript_number(value), text) << text;
}

TEST(JcsTest, SortsByUtf16CodeUnitsAndEscapesOnlyWhatJsonRequires) {
  // RFC 8785 section 3.2.3's example: U+1F600 (surrogates D83D DE00) sorts before U+FB33.
  nlohmann::json value = nlohmann::json::object();
  value["\u20ac"] = "Euro Sign";
  value["\r"] = "Carriage Return";
  value["\xef\xac\xb3"] = "Hebrew Letter Dalet With Dagesh";
  value["1"] = "One";
  value["\xf0\x9f\x98\x80"] = "Emoji: Grinning Face";
  value["\xc2\x80"] = "Control";
  value["\xc3\xb6"] = "Latin Small Letter O With Diaeresis";
  EXPECT_EQ(jcs(value),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
            "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\","
            "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
            "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
  EXPECT_EQ(jcs(nlohmann::json("a\x01\x7f/\"")), "\"a\\u0001\x7f/\\\"\"");
  EXPECT_EQ(jcs(nlohmann::json::parse(R"({"b":[1.0,2.50,true,null],"a":{}})")),
            R"({"a":{},"b":[1,2.5,true,null]})");
}

// The digests kernelindex.dev's own example documents carry for each other (the example run names
// the example protocol's digest): the definition, checked against its publisher's numbers.
TEST(JcsTest, DocumentDigestsAreKernelindexDigests) {
  const auto protocol = nlohmann::json::parse(R"({
    "apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkProtocol",
    "metadata": {"name": "example-fixed-clock-median"},
    "spec": {"harness": {"name": "example-harness", "version": "1.0"},
             "measurement": {"timer": "device_events", "synchronization": "device_sync",
                             "compileIncluded": false, "warmupIterations": 50, "samples": 200,
                             "inputRegeneration": "per_sample", "primaryStatistic": "median"},
             "correctness": {"reference": "fp32 eager reference", "comparator": "elementwise_close"},
             "devicePolicy": {"clocksLocked": true, "persistenceMode": true},
             "comparability": {"family": "example_fixed_clock",
                               "notes": "Comparable only inside this example protocol family."}}})");
  EXPECT_EQ(document_digest(protocol),
            "sha256:6ac212f99724757d058e7a7f440314debd2fed235c5178bc006b62c0d5e0d295");
  // A fraction written 0.0 and 1.0: JCS prints 0 and 1 (the example workload's parameters).
  const auto workload = nlohmann::json::parse(R"({
    "apiVersion": "kernelindex.dev/v1alpha1", "kind": "WorkloadCase",
    "spec": {"operationSpecDigest": "sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b",
      "axes": {"tokens": 2048, "hidden": 4096},
      "tensors": {
        "input": {"shape": [2048, 4096], "dtype": "bf16", "strides": [4096, 1], "alignmentBytes": 16,
                  "data": {"generator": "normal", "seed": 230485, "parameters": {"mean": 0.0, "stddev": 1.0}}},
        "weight": {"shape": [4096], "dtype": "bf16", "strides": [1], "alignmentBytes": 16,
                   "data": {"generator": "normal", "seed": 230486, "parameters": {"mean": 1.0, "stddev": 0.1}}}},
      "scalars": {"epsilon": {"dtype": "fp32", "value": 0.000001}},
      "correctness": {"comparator": "elementwise_close", "maxAbsoluteError": 0.01,
                      "maxRelativeError": 0.01, "requiredMatchedRatio": 0.99,
                      "nanPolicy": "reject", "infinityPolicy": "exact_match"}}})");
  EXPECT_EQ(document_digest(workload),
            "sha256:944ceb3a7d7d4a4c47f1f8ed239363f4be78a2a90293b4325fb18a274cf97aa3");
  // The key's identity form stays nlohmann's: the same document, another digest.
  EXPECT_NE(identity_digest(workload), document_digest(workload));
}

TEST(DigestTest, IsDigestRejectsMalformed) {
  EXPECT_FALSE(is_digest("sha256:abc"));
  EXPECT_FALSE(is_digest("md5:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_FALSE(
      is_digest("sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
}

}  // namespace
}  // namespace kernelwatch::core
