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

TEST(DigestTest, IsDigestRejectsMalformed) {
  EXPECT_FALSE(is_digest("sha256:abc"));
  EXPECT_FALSE(is_digest("md5:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_FALSE(
      is_digest("sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
}

}  // namespace
}  // namespace kernelwatch::core
