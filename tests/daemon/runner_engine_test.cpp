// The liger-bench runner's runs through the daemon's engine, over a database that imported
// Liger's weekly CSV history: a rerun of PyTorch's TVD backward 30% above its H100 band fires
// one alert naming that band, after the confirming rerun the producer interface gives. The
// runner is a fake Python script (no GPU, no torch); the clock is the test's, dated from the
// newest imported row (never from today).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/key.hpp"
#include "daemon/engine.hpp"
#include "runners/liger_csv.hpp"
#include "runners/liger_import.hpp"
#include "runners/producer.hpp"
#include "storage/importer.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::daemon {
namespace {

using namespace std::chrono_literals;

constexpr const char* kKey = "tvd/backward torch tokens16384-vocab65536-fp32 nvidia-h100-80gb-hbm3";

TEST(RunnerEngine, AThirtyPercentRerunAboveTheImportedBandFiresOneAlertNamingTheBand) {
  const auto csv = testing::liger_csv("weekly_ci.tvd_layer_norm.csv");
  // The key's imported history: its newest run dates the test's clock, its median the step.
  auto items = runners::read_liger_csv(testing::read_file(csv), csv.filename().string());
  ASSERT_TRUE(items) << items.error().message;
  core::Timestamp newest{};
  double newest_ms = 0;
  std::size_t history = 0;
  for (const auto& item : *items) {
    if (item.kind != storage::ItemKind::Run) continue;
    const auto key = core::key_of(item.record);
    if (!key || key->display() != kKey) continue;
    ++history;
    if (item.record.run.observed_at > newest) {
      newest = item.record.run.observed_at;
      newest_ms = static_cast<double>(item.record.run.median->count()) / 1e6;
    }
  }
  ASSERT_GE(history, 10U);
  core::Timestamp now = newest + 24h * 7;
  const auto clock = [&now] { return now; };

  testing::TempDir dir;
  auto store = storage::Connection::open(dir / "kw.db", storage::OpenMode::Create);
  ASSERT_TRUE(store) << store.error().message;
  const std::vector<std::filesystem::path> paths = {csv};
  auto report = storage::import_files(*store, paths, storage::InvalidPolicy::Skip,
                                      &runners::liger_csv_reader());
  ASSERT_TRUE(report) << report.error().message;
  EngineOptions options;
  options.confirm_reruns = 1;
  options.host = "runner-engine-test";
  Engine engine(*store, options);
  ASSERT_TRUE(engine.rebuild());

  // The fake liger_bench.py: every case at 1.3x the newest imported median, on an H100.
  const auto script = dir / "fake_liger_bench.py";
  testing::write_file(script, R"(import json, sys
for case in json.load(sys.stdin)["cases"]:
    p50 = )" + std::to_string(newest_ms * 1.3) +
                                  R"(
    print(json.dumps({"case": case, "status": "passed",
        "ms": {"p50": p50, "p20": p50 * 0.999, "p80": p50 * 1.001},
        "device": {"name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "index": 0},
        "versions": {"torch": "2.7.0", "triton": "3.3.0", "liger_kernel": "0.6.1",
                     "cuda": "12.6", "python": "3.12.3"}}), flush=True)
)");
  runners::LigerBenchOptions liger;
  liger.python = "python3";
  liger.script = script;
  std::unique_ptr<runners::RunProducer> producer = std::make_unique<runners::LigerBenchProducer>(
      liger, runners::LigerCase{kernels::KernelRef("tvd"), core::Pass::Backward,
                                runners::LigerProvider::Torch,
                                core::Workload::from_label("tokens16384-vocab65536-fp32").value()});

  // The daemon's loop for one case: run, process, rerun while the engine awaits confirmation.
  std::vector<Processed> processed;
  for (int attempt = 0; attempt <= options.confirm_reruns; ++attempt) {
    auto produced = producer->run(clock);
    ASSERT_TRUE(produced) << produced.error().message;
    ASSERT_EQ(produced->runs.size(), 1U);
    const core::Run& run = produced->runs.front();
    ASSERT_EQ(run.record().run.status, core::RunStatus::Passed);
    auto p = engine.process(run, now);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->key_display, kKey);
    EXPECT_FALSE(p->duplicate);
    processed.push_back(*p);
    now += 1min;
    if (!p->awaits_confirmation) break;
  }
  ASSERT_EQ(processed.size(), 2U) << "the first breach must wait for its confirming rerun: "
                                  << processed[0].verdict.explanation;
  EXPECT_EQ(processed[0].verdict.kind, detectors::VerdictKind::Regression)
      << processed[0].verdict.explanation;
  auto closed = engine.close_cycle(now);
  ASSERT_TRUE(closed) << closed.error().message;
  ASSERT_EQ(closed->fired.size(), 1U);
  EXPECT_TRUE(closed->incidents.empty());
  const core::Alert& alert = closed->fired[0];
  EXPECT_EQ(alert.key.display(), kKey);
  EXPECT_EQ(core::to_string(alert.direction), "regression");
  const nlohmann::json doc = core::to_json(alert);
  ASSERT_TRUE(doc.contains("band")) << doc.dump();
  const double upper = doc["band"]["upper"].get<double>();
  const double lower = doc["band"]["lower"].get<double>();
  // The band is the imported history's: it holds the newest imported median, not the rerun's.
  EXPECT_LT(lower, newest_ms * 1e6);
  EXPECT_GT(upper, newest_ms * 1e6 * 0.98);
  EXPECT_LT(upper, newest_ms * 1e6 * 1.3);
  EXPECT_GT(doc["relativeChange"].get<double>(), 0.2);
  EXPECT_NE(alert.explanation.find("band"), std::string::npos) << alert.explanation;
}

}  // namespace
}  // namespace kernelwatch::daemon
