// The dashboard at scale: builds (once) a scratch database of KEYS keys with RUNS runs each plus
// one key of BIG runs (a 20% step two thirds in) through the real insert path, then renders the
// overview (every key's row from a replay, page 1) and the big key's page in process and prints
// p50/p99 over N renders and the page weights. The served figures come from the real daemon over
// this database with kw_bench_status_load (docs/PERFORMANCE.md, "Dashboard").
//
//   kw_bench_dashboard DB [KEYS=5000] [RUNS=20] [BIG=10000] [N=50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/key.hpp"
#include "storage/alerts.hpp"
#include "storage/run_store.hpp"
#include "web/model.hpp"
#include "web/pages.hpp"

namespace {

using namespace kernelwatch;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* const kGpus[] = {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB"};
const char* const kPasses[] = {"forward", "backward"};

core::Record synthetic_record(int key, std::int64_t run, std::int64_t median) {
  const int hidden = 256 + key;
  const core::Workload workload = core::Workload::layer_norm(4096, hidden, core::DType::Fp32);
  const core::Hardware hardware = core::hardware_from_gpu_name(kGpus[key % 3]);
  const std::string pass = kPasses[(key / 3) % 2];
  const core::Timestamp at =
      core::Timestamp{std::chrono::hours{24 * 365 * 55}} + std::chrono::minutes{15 * run};
  const json doc = {
      {"run",
       {{"apiVersion", core::kApiVersion},
        {"kind", "BenchmarkRun"},
        {"spec",
         {{"status", "passed"},
          {"timing", {{"latencyNs", {{"median", median}}}, {"primaryStatistic", "median"}}},
          {"observedAt", core::format_timestamp(at)},
          {"measurements", json::array({{{"metric", "latency"},
                                         {"statistic", "p20"},
                                         {"unit", "ns"},
                                         {"value", median - 900}},
                                        {{"metric", "latency"},
                                         {"statistic", "p80"},
                                         {"unit", "ns"},
                                         {"value", median + 900}}})},
          {"sourceNative",
           {{"source", "kernelwatch-bench"},
            {"benchmark", "layer_norm/" + pass},
            {"externalId", "layer_norm/" + pass + "/kernelwatch-fused/" +
                               core::environment_label(hardware) + "/" + workload.label() + "/" +
                               core::format_id_timestamp(at)}}}}},
        {"metadata", {{"labels", {{"kernelwatch_version", "0.1.0"}}}}}}},
      {"protocol",
       {{"apiVersion", core::kApiVersion},
        {"kind", "BenchmarkProtocol"},
        {"spec",
         {{"harness", {{"name", "kernelwatch"}}},
          {"measurement", {{"timer", "cuda_events"}, {"primaryStatistic", "median"}}}}},
        {"metadata", {{"name", "kernelwatch-cuda-events-" + pass}}}}},
      {"environment",
       {{"apiVersion", core::kApiVersion},
        {"kind", "ExecutionEnvironment"},
        {"spec", core::environment_identity(hardware)["spec"]}}}};
  auto record = core::parse_record(doc);
  if (!record) {
    std::fprintf(stderr, "record: %s\n", record.error().message.c_str());
    std::exit(1);
  }
  return *record;
}

int generate(storage::Connection& connection, int keys, int runs, int big) {
  storage::RunStore store(connection);
  const auto start = Clock::now();
  std::int64_t stored = 0;
  const auto insert = [&](storage::Transaction& tx, int key, std::int64_t run,
                          std::int64_t median) {
    if (auto ok = store.insert_run(tx, synthetic_record(key, run, median), ""); !ok) {
      std::fprintf(stderr, "%s\n", ok.error().message.c_str());
      std::exit(1);
    }
    ++stored;
  };
  for (int run = 0; run < runs; ++run) {
    auto tx = connection.begin();
    if (!tx) return 1;
    for (int key = 1; key < keys; ++key) insert(*tx, key, run, 500000 + (run * 7919 + key) % 5000);
    if (!tx->commit()) return 1;
  }
  // Key 0: the long history, 20% slower from two thirds on.
  for (int done = 0; done < big;) {
    auto tx = connection.begin();
    if (!tx) return 1;
    for (int i = 0; i < 5000 && done < big; ++i, ++done) {
      const std::int64_t base = done >= big * 2 / 3 ? 600000 : 500000;
      insert(*tx, 0, done, base + (done * 7919) % 5000);
    }
    if (!tx->commit()) return 1;
  }
  std::printf("generated %lld runs in %.1f s\n", static_cast<long long>(stored),
              std::chrono::duration<double>(Clock::now() - start).count());
  return 0;
}

void report(const char* what, std::vector<double> ms, std::size_t bytes) {
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) {
    return ms[std::min(ms.size() - 1,
                       static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
  };
  std::printf("%-44s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  page %zu bytes\n", what, at(0.5),
              at(0.99), ms.back(), bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kw_bench_dashboard DB [KEYS=5000] [RUNS=20] [BIG=10000] [N=50]\n");
    return 2;
  }
  const std::filesystem::path path = argv[1];
  const int keys = argc > 2 ? std::atoi(argv[2]) : 5000;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 20;
  const int big = argc > 4 ? std::atoi(argv[4]) : 10000;
  const int n = argc > 5 ? std::atoi(argv[5]) : 50;
  const bool fresh = !std::filesystem::exists(path);
  auto connection = storage::Connection::open(path, storage::OpenMode::Create);
  if (!connection) {
    std::fprintf(stderr, "%s\n", connection.error().message.c_str());
    return 1;
  }
  if (fresh && generate(*connection, keys, runs, big) != 0) return 1;

  web::ReplayOptions options;  // each run as the daemon judged it, as the dashboard replays
  // The static report's path: every key's row from the one whole replay of the store.
  auto start = Clock::now();
  auto site = web::site_from_replay(*connection, options);
  if (!site) return 1;
  auto* rows = &site->rows;
  std::printf("overview rows from a replay of the store: %zu keys in %.0f ms\n", rows->size(),
              std::chrono::duration<double>(Clock::now() - start).count() * 1e3);
  // The daemon's path when the engine changed: sparklines and counts, one query per key.
  start = Clock::now();
  if (!web::add_sparklines(storage::RunStore(*connection), *rows)) return 1;
  std::printf("sparklines and run counts for %zu keys: %.0f ms\n", rows->size(),
              std::chrono::duration<double>(Clock::now() - start).count() * 1e3);

  std::vector<double> ms;
  std::size_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    start = Clock::now();
    const std::string html = web::render_overview(*rows, {}, nullptr, web::LinkMode::Served);
    ms.push_back(std::chrono::duration<double>(Clock::now() - start).count() * 1e3);
    bytes = html.size();
  }
  report("render overview (rows cached)", ms, bytes);

  // The big key: replay + render, as each key page request does.
  const auto big_key =
      std::max_element(rows->begin(), rows->end(),
                       [](const auto& a, const auto& b) { return a.run_count < b.run_count; });
  const std::string ref = web::key_ref(big_key->key);
  std::printf("big key %s (%lld runs): /keys/%s\n", big_key->key.display().c_str(),
              static_cast<long long>(big_key->run_count), ref.c_str());
  ms.clear();
  for (int i = 0; i < n; ++i) {
    start = Clock::now();
    auto replay = web::replay_key(*connection, ref, options, site->alerts);
    if (!replay || !*replay) return 1;
    const std::string html = web::render_key(**replay, {}, {}, web::LinkMode::Served);
    ms.push_back(std::chrono::duration<double>(Clock::now() - start).count() * 1e3);
    bytes = html.size();
  }
  report("key page: replay + render (newest 400)", ms, bytes);
  ms.clear();
  web::KeyQuery all;
  all.last = 0;
  for (int i = 0; i < std::max(1, n / 5); ++i) {
    start = Clock::now();
    auto replay = web::replay_key(*connection, ref, options, site->alerts);
    if (!replay || !*replay) return 1;
    const std::string html = web::render_key(**replay, {}, all, web::LinkMode::Served);
    ms.push_back(std::chrono::duration<double>(Clock::now() - start).count() * 1e3);
    bytes = html.size();
  }
  report("key page, all runs on the chart (last=all)", ms, bytes);
  return 0;
}
