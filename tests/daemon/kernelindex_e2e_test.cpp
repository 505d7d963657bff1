// Issue #23 through the real binary: every document kernelwatch writes (bench --json, history
// --json, GET /api/v1/runs of posted and imported runs) is valid by the public kernelindex
// schemas, checked by an independent validator (Debian's python3-jsonschema, which also
// recomputes the digests); what the schemas refuse is refused on import and on POST, naming the
// field; a kernelindex tool's export of separate documents imports into one key.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/support/conformance.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kToken = "kernelindex-token-51d0";

std::filesystem::path source(const std::string& relative) {
  return std::filesystem::path(KW_SOURCE_DIR) / relative;
}

// The publisher's five example documents, one per line in an order that puts the run first.
std::string examples_as_jsonl() {
  std::string out;
  for (const char* name : {"benchmark-run.json", "workload-case.json", "benchmark-protocol.json",
                           "implementation-revision.json", "execution-environment.json"}) {
    out +=
        json::parse(testing::read_file(source("third_party/kernelindex/examples/") / name)).dump() +
        "\n";
  }
  return out;
}

void expect_valid_file(const std::filesystem::path& file) {
  const auto checked = testing::check_file_against_schemas(file);
  EXPECT_TRUE(checked.valid) << checked.report;
}

class KernelindexE2E : public ::testing::Test {
 protected:
  void SetUp() override { KW_REQUIRE_JSONSCHEMA(); }

  testing::ProcessResult kw(const std::vector<std::string>& args) {
    return testing::run_kernelwatch(args);
  }
  std::filesystem::path db() const { return dir_ / "kw.db"; }

  testing::TempDir dir_;
};

TEST_F(KernelindexE2E, BenchJsonOfEveryCaseIsValid) {
  for (const std::string kernel : {"tvd", "layer_norm", "rms_norm"}) {
    SCOPED_TRACE(kernel);
    std::vector<std::string> args = {"bench", "--kernel",  kernel, "--pass",
                                     "full",  "--backend", "cpu",  "--warmup-ms",
                                     "2",     "--rep-ms",  "5",    "--json"};
    const std::vector<std::string> shape =
        kernel == "tvd"        ? std::vector<std::string>{"--tokens", "32", "--vocab", "256"}
        : kernel == "rms_norm" ? std::vector<std::string>{"--workload", "h256-fp32-eps1e-06-m32"}
                               : std::vector<std::string>{"--rows", "32", "--hidden", "256"};
    args.insert(args.end(), shape.begin(), shape.end());
    const auto r = kw(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto file = dir_ / (std::string(kernel) + ".json");
    testing::write_file(file, r.out);
    const json records = json::parse(r.out);
    ASSERT_EQ(records.size(), 2u);  // kernelwatch-fused and kernelwatch-reference
    for (const auto& record : records) EXPECT_EQ(record["run"]["spec"]["status"], "passed");
    expect_valid_file(file);
  }
}

TEST_F(KernelindexE2E, AFailedRunnerRunIsValidAndSaysWhy) {
  // A runner script that cannot import torch, as on a host without it.
  const auto script = dir_ / "no_torch.py";
  testing::write_file(script,
                      "import sys\nprint('liger_bench: cannot import torch: No module named "
                      "torch', file=sys.stderr)\nsys.exit(3)\n");
  const auto r = kw({"bench", "--kernel", "tvd", "--pass", "backward", "--runner", "liger-bench",
                     "--provider", "liger", "--script", script.string(), "--json"});
  const auto file = dir_ / "failed.json";
  testing::write_file(file, r.out);
  const json records = json::parse(r.out);
  ASSERT_EQ(records.size(), 1u) << r.err;
  EXPECT_EQ(records[0]["run"]["spec"]["status"], "runtime_error");
  EXPECT_NE(
      records[0]["run"]["metadata"]["description"].get<std::string>().find("cannot import torch"),
      std::string::npos);
  expect_valid_file(file);
}

TEST_F(KernelindexE2E, ImportedHistoryExportsValidWithEveryDigestRecomputed) {
  const auto examples = dir_ / "examples.jsonl";
  testing::write_file(examples, examples_as_jsonl());
  const auto imported =
      kw({"import", "--db", db().string(),
          testing::fixture("layer-norm-backward-liger-h100-"
                           "hidden16384-rows4096-fp32.json")
              .string(),
          testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json").string(),
          testing::liger_csv("all_benchmark_data.tvd_layer_norm.csv").string(), examples.string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto history = kw({"history", "--db", db().string(), "--json", "--limit", "0"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  const auto file = dir_ / "history.json";
  testing::write_file(file, history.out);
  expect_valid_file(file);
  // The example run: one run in one key, its workload document kept with it.
  const json all = json::parse(history.out);
  std::size_t examples_found = 0;
  for (const auto& record : all) {
    if (record["run"]["metadata"]["name"] != "example-meridian-rmsnorm-b200") continue;
    ++examples_found;
    EXPECT_EQ(record["workload"]["metadata"]["name"], "rmsnorm-h4096-tokens-2048");
  }
  EXPECT_EQ(examples_found, 1u);
  const auto keys = kw({"keys", "--db", db().string()});
  EXPECT_NE(keys.out.find("kernelindex/op-7a3b25630f06"), std::string::npos) << keys.out;
  EXPECT_NE(keys.out.find("hidden_4096-tokens_2048-bf16"), std::string::npos) << keys.out;
  // Importing the same documents again stores nothing new.
  const auto again = kw({"import", "--db", db().string(), examples.string()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("new 0, duplicate 1"), std::string::npos) << again.out;
}

TEST_F(KernelindexE2E, ImportRefusesWhatTheSchemasRefuseNamingFileLineAndField) {
  json record = json::parse(testing::read_file(
      testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json")));
  record["run"]["metadata"]["name"] = "Not A Name";
  const auto file = dir_ / "bad.jsonl";
  testing::write_file(file, json(json::parse(testing::read_file(testing::fixture(
                                     "layer-norm-backward-liger-h100-hidden16384-rows4096-fp32."
                                     "json"))))
                                    .dump() +
                                "\n" + record.dump() + "\n");
  const auto r = kw({"import", "--db", db().string(), file.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(file.string() + ":2: run.metadata.name: \"Not A Name\" does not match "
                                       "^[a-z0-9][a-z0-9._-]*$"),
            std::string::npos)
      << r.err;
  // A run whose documents are not in the stream: the missing digest is named.
  std::string lines = examples_as_jsonl();
  const auto environment = lines.rfind("{\"apiVersion\"");
  lines.erase(environment);  // drop the ExecutionEnvironment, the last line
  const auto partial = dir_ / "partial.jsonl";
  testing::write_file(partial, lines);
  const auto missing = kw({"import", "--db", db().string(), partial.string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(
      missing.err.find(partial.string() +
                       ":1: spec.environmentDigest: the ExecutionEnvironment "
                       "sha256:46cf7b24b586c71505152d0103b9e84101de1ac5b66cdd76aabc88356e93db79"
                       " is not in the input"),
      std::string::npos)
      << missing.err;
}

TEST_F(KernelindexE2E, PostedRunsAreCheckedAndWhatTheApiAnswersIsValid) {
  testing::write_file(dir_ / "token", std::string(kToken) + "\n");
  std::filesystem::permissions(
      dir_ / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const json config = {
      {"storage", {{"path", db().string()}}},
      {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir_ / "token").string()}}},
      {"backend", "cpu"},
      {"benchmarks", json::array()},
      {"notifiers", json::array()}};
  testing::write_file(dir_ / "kernelwatch.json", config.dump(2));
  // A run kernelwatch itself makes, and one of 0.1.0's own exports (upgraded on the way in).
  const auto bench = kw({"bench", "--kernel", "tvd", "--pass", "forward", "--backend", "cpu",
                         "--provider", "kernelwatch-fused", "--tokens", "32", "--vocab", "256",
                         "--warmup-ms", "2", "--rep-ms", "5", "--json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const json legacy =
      json::parse(testing::read_file(source("tests/data/legacy-0.1.0/history-0.1.0.json")));
  json batch = json::parse(bench.out);
  for (const auto& r : legacy) {
    if (r["run"]["spec"]["sourceNative"].value("source", "") == "kernelwatch") batch.push_back(r);
  }
  ASSERT_EQ(batch.size(), 5u);

  testing::DaemonChild daemon;
  daemon.start(dir_ / "kernelwatch.json", dir_ / "daemon.log");
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const auto posted = testing::http(daemon.port(), "POST", "/api/v1/runs", batch.dump(), kToken);
  EXPECT_EQ(posted.status, 200) << posted.body;

  json bad = json::parse(bench.out)[0];
  bad["run"]["spec"]["statusDetail"] = "fast";
  const auto refused = testing::http(daemon.port(), "POST", "/api/v1/runs", bad.dump(), kToken);
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("run.spec.statusDetail: is not a field of the schema"),
            std::string::npos)
      << refused.body;

  const auto runs = testing::http(daemon.port(), "GET", "/api/v1/runs?limit=100");
  ASSERT_EQ(runs.status, 200);
  EXPECT_EQ(json::parse(runs.body).size(), 5u);
  const auto file = dir_ / "api-runs.json";
  testing::write_file(file, runs.body);
  expect_valid_file(file);
  daemon.stop();
}

}  // namespace
}  // namespace kernelwatch
