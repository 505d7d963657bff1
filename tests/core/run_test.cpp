#include "core/run.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/record_batch.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

constexpr const char* kTvd = "tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json";
constexpr const char* kLayerNorm = "layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json";

Record load(const char* name) {
  auto record = parse_record(json::parse(testing::read_file(testing::fixture(name))));
  EXPECT_TRUE(record);
  return *record;
}

TEST(Run, CarriesItsRecordsKeyAndTheKeysDigest) {
  const Record record = load(kTvd);
  auto run = Run::of(record, RunFigures{.repetitions = 7});
  ASSERT_TRUE(run) << run.error().message;
  const auto key = key_of(record).value();
  EXPECT_EQ(run->key().display(), key.display());
  EXPECT_EQ(run->key_digest(), key.digest());
  EXPECT_EQ(run->record().run.source_native.external_id, record.run.source_native.external_id);
  EXPECT_EQ(run->figures().repetitions, 7);
  EXPECT_EQ(run->figures().achieved_gbps, 0);
}

TEST(Run, ARecordWithoutAKeyIsNoRun) {
  Record record = load(kTvd);
  record.run.source_native.benchmark = "no-pass";  // a benchmark name is kernel/pass
  record.run.metadata.labels.erase("provider");
  const auto key = key_of(record);
  ASSERT_FALSE(key);
  const auto run = Run::of(record);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, key.error().code);
  EXPECT_EQ(run.error().message, key.error().message);
}

TEST(Run, RunsOfNamesTheRecordWithoutAKey) {
  std::vector<Record> records{load(kTvd), load(kLayerNorm), load(kTvd)};
  records[2].run.source_native.benchmark = "no-pass";
  records[2].run.metadata.labels.erase("provider");
  const auto failed = runs_of(records);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message.rfind("record 2: ", 0), 0U) << failed.error().message;
  records.pop_back();
  const auto runs = runs_of(records);
  ASSERT_TRUE(runs) << runs.error().message;
  ASSERT_EQ(runs->size(), 2U);
  EXPECT_EQ((*runs)[0].key().benchmark.label, "tvd/backward");
  EXPECT_EQ((*runs)[1].key().benchmark.label, "layer_norm/backward");
}

// A posted batch's runs come with their keys: the handler and the engine derive none again.
TEST(Run, APostedBatchIsRunsWithTheirKeys) {
  const Record tvd = load(kTvd);
  const json body = json::array({to_json(tvd), to_json(load(kLayerNorm))});
  const auto batch = parse_record_batch(body.dump(), tvd.run.observed_at);
  ASSERT_TRUE(batch) << batch.error().message;
  ASSERT_EQ(batch->size(), 2U);
  EXPECT_EQ((*batch)[0].key_digest(), key_of(tvd).value().digest());
  EXPECT_EQ((*batch)[1].key().provider.label, "liger");
}

}  // namespace
}  // namespace kernelwatch::core
