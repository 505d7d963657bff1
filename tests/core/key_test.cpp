#include "core/key.hpp"

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::core {
namespace {

using nlohmann::json;

Record load(const char* name) {
  auto record = parse_record(json::parse(testing::read_file(testing::fixture(name))));
  EXPECT_TRUE(record);
  return *record;
}

TEST(KeyTest, FixtureKeyPartsAndKernelindexDigests) {
  const Record record = load("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json");
  auto key = key_of(record);
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(key->benchmark.label, "tvd/backward");
  EXPECT_EQ(key->provider.label, "torch");
  EXPECT_EQ(key->workload.label, "tokens16384-vocab65536-fp32");
  EXPECT_EQ(key->environment.label, "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(key->protocol.label, "liger-bench-do-bench-backward");
  // Our canonical environment and protocol digests are kernelindex's own definition.
  EXPECT_EQ(key->environment.digest, record.run.environment_digest);
  EXPECT_EQ(key->protocol.digest, record.run.protocol_digest);
  EXPECT_TRUE(is_digest(key->digest()));
}

TEST(KeyTest, KeyIgnoresNamesSoftwareAndTimeButNotIdentity) {
  const Record base = load("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json");
  const std::string digest = key_of(base)->digest();

  Record renamed = base;
  renamed.environment.metadata.name = "another-host";
  renamed.environment.software = {{"driver", "560.1"}};
  renamed.run.observed_at += std::chrono::hours{24};
  EXPECT_EQ(key_of(renamed)->digest(), digest);

  Record other_gpu = base;
  other_gpu.environment.hardware.form_factor = "NVL";
  EXPECT_NE(key_of(other_gpu)->digest(), digest);

  Record other_protocol = base;
  other_protocol.protocol.spec["measurement"]["timer"] = "wall_clock";
  EXPECT_NE(key_of(other_protocol)->digest(), digest);

  Record labelled = base;
  labelled.run.metadata.labels["provider"] = "other";
  EXPECT_EQ(key_of(labelled)->provider.label, "other");
  EXPECT_NE(key_of(labelled)->digest(), digest);
}

TEST(KeyTest, BadBenchmarkOrMissingProviderIsAnError) {
  Record record = load("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json");
  record.run.source_native.benchmark = "layer_norm";
  ASSERT_FALSE(key_of(record));
  EXPECT_NE(key_of(record).error().message.find("is not <kernel>/<pass>"), std::string::npos);

  record = load("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json");
  record.run.source_native.external_id = "opaque-id";
  ASSERT_FALSE(key_of(record));
  EXPECT_NE(key_of(record).error().message.find("no provider"), std::string::npos);
}

TEST(WorkloadTest, LabelsRoundTrip) {
  for (const char* label : {"hidden16384-rows4096-fp32", "tokens16384-vocab65536-fp32",
                            "hidden4097-rows1-bf16", "hidden1024-rows4096-fp32-eps1e-05",
                            "synthetic-key-1", "hidden_size2048-bf16-beta_false-bt4096"}) {
    auto w = Workload::from_label(label);
    ASSERT_TRUE(w) << label << ": " << w.error().message;
    EXPECT_EQ(w->label(), label);
  }
  auto ln = Workload::from_label("hidden16384-rows4096-fp32");
  EXPECT_EQ(ln->kernel, "layer_norm");
  EXPECT_TRUE(Workload::from_label("synthetic-key-1")->opaque());
  EXPECT_FALSE(ln->opaque());
  EXPECT_EQ(ln->hidden, 16384);
  EXPECT_EQ(ln->rows, 4096);
  EXPECT_EQ(ln->digest(), Workload::layer_norm(4096, 16384, DType::Fp32).digest());
  EXPECT_NE(ln->digest(), Workload::layer_norm(4096, 16384, DType::Bf16).digest());
  EXPECT_NE(ln->digest(), Workload::layer_norm(4096, 16384, DType::Fp32, 1e-5).digest());
}

TEST(WorkloadTest, MalformedLabelsAreErrors) {
  for (const char* label : {"", "hidden-rows4096-fp32", "hidden16384-rows4096-fp64",
                            "tokens16384-vocab0-fp32", "tokens1-vocab2-fp32-x", "Hidden 1"}) {
    auto w = Workload::from_label(label);
    EXPECT_FALSE(w) << label;
  }
  EXPECT_NE(Workload::from_label("hidden16384-rows4096-fp64")
                .error()
                .message.find("unknown dtype \"fp64\""),
            std::string::npos);
}

TEST(HardwareTest, GpuNamesFromTheLigerData) {
  struct Case {
    const char* name;
    const char* product;
    const char* form;
    const char* arch;
    const char* label;
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", "NVIDIA H100", "80GB HBM3", "sm_90", "nvidia-h100-80gb-hbm3"},
      {"NVIDIA H100 NVL", "NVIDIA H100", "NVL", "sm_90", "nvidia-h100-nvl"},
      {"NVIDIA H200", "NVIDIA H200", "", "sm_90", "nvidia-h200"},
      {"NVIDIA A100-SXM4-80GB", "NVIDIA A100", "SXM4-80GB", "sm_80", "nvidia-a100-sxm4-80gb"},
  };
  for (const auto& c : cases) {
    const Hardware hw = hardware_from_gpu_name(c.name);
    EXPECT_EQ(hw.vendor, "nvidia");
    EXPECT_EQ(hw.product, c.product);
    EXPECT_EQ(hw.form_factor, c.form);
    EXPECT_EQ(hw.architecture, c.arch);
    EXPECT_EQ(environment_label(hw), c.label);
  }
}

TEST(ExternalIdTest, ParsesTheFixtureForm) {
  auto id = parse_external_id(
      "tvd/backward/torch/nvidia-h100-80gb-hbm3/tokens16384-vocab65536-fp32/2026-03-03-23-02-57");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->benchmark, "tvd/backward");
  EXPECT_EQ(id->provider, "torch");
  EXPECT_EQ(id->environment, "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(id->workload, "tokens16384-vocab65536-fp32");
  EXPECT_EQ(id->timestamp, "2026-03-03-23-02-57");
  EXPECT_FALSE(parse_external_id("a/b/c"));
  EXPECT_FALSE(parse_external_id("a//c/d/e/f"));
}

}  // namespace
}  // namespace kernelwatch::core
