// Builds (once) a database of RUNS runs over KEYS keys through the real insert path, then times
// one key's newest-20 query for random keys. Usage:
//   kw_bench_history DB [KEYS=1000] [RUNS=1000000] [QUERIES=2000]
// An existing DB with the right run count is reused, so the query timing can be repeated.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/key.hpp"
#include "storage/run_store.hpp"

namespace {

using namespace kernelwatch;
using nlohmann::json;

core::Record synthetic_record(int key, std::int64_t run) {
  const core::Workload workload = core::Workload::layer_norm(4096, 256 + key, core::DType::Fp32);
  const core::Hardware hardware = core::hardware_from_gpu_name("NVIDIA H100 80GB HBM3");
  const core::Timestamp at =
      core::Timestamp{std::chrono::hours{24 * 365 * 55}} + std::chrono::minutes{15 * run};
  const std::int64_t median = 500000 + (run * 7919) % 5000;
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
            {"benchmark", "layer_norm/backward"},
            {"externalId", "layer_norm/backward/kernelwatch-fused/nvidia-h100-80gb-hbm3/" +
                               workload.label() + "/" + core::format_id_timestamp(at)}}}}},
        {"metadata", {{"labels", {{"kernelwatch_version", "0.1.0"}}}}}}},
      {"protocol",
       {{"apiVersion", core::kApiVersion},
        {"kind", "BenchmarkProtocol"},
        {"spec",
         {{"harness", {{"name", "kernelwatch"}}},
          {"measurement", {{"timer", "cuda_events"}, {"primaryStatistic", "median"}}}}},
        {"metadata", {{"name", "kernelwatch-cuda-events-backward"}}}}},
      {"environment",
       {{"apiVersion", core::kApiVersion},
        {"kind", "ExecutionEnvironment"},
        {"spec", core::environment_identity(hardware)["spec"]}}}};
  return *core::parse_record(doc);
}

// The main file plus the WAL, which holds whatever the last checkpoint has not copied yet.
std::uintmax_t file_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  std::uintmax_t total = std::filesystem::file_size(path, ec);
  if (ec) total = 0;
  const auto wal = std::filesystem::file_size(path.string() + "-wal", ec);
  return ec ? total : total + wal;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kw_bench_history DB [KEYS] [RUNS] [QUERIES]\n");
    return 2;
  }
  const std::filesystem::path path = argv[1];
  const int keys = argc > 2 ? std::atoi(argv[2]) : 1000;
  const std::int64_t runs = argc > 3 ? std::atoll(argv[3]) : 1000000;
  const int queries = argc > 4 ? std::atoi(argv[4]) : 2000;

  auto connection = storage::Connection::open(path, storage::OpenMode::Create);
  if (!connection) {
    std::fprintf(stderr, "%s\n", connection.error().message.c_str());
    return 1;
  }
  storage::RunStore store(*connection);
  if (*store.run_count() != runs) {
    if (*store.run_count() != 0) {
      std::fprintf(stderr, "%s holds another run count; remove it first\n", path.c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t per_key = runs / keys;
    constexpr std::int64_t kBatch = 20000;
    std::int64_t done = 0;
    while (done < runs) {
      auto tx = connection->begin();
      if (!tx) return 1;
      for (std::int64_t i = 0; i < kBatch && done < runs; ++i, ++done) {
        // Runs interleave across keys, as a daemon writes them.
        const int key = static_cast<int>(done % keys);
        const std::int64_t run = done / keys;
        if (run >= per_key) continue;
        if (auto ok = store.insert_run(*tx, synthetic_record(key, run), ""); !ok) {
          std::fprintf(stderr, "%s\n", ok.error().message.c_str());
          return 1;
        }
      }
      if (!tx->commit()) return 1;
      std::fprintf(stderr, "\rgenerated %lld runs", static_cast<long long>(done));
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\n");
    std::printf("generated %lld runs over %d keys in %.1f s (%.0f runs/s), file %.0f MiB\n",
                static_cast<long long>(runs), keys, s, static_cast<double>(runs) / s,
                static_cast<double>(file_bytes(path)) / (1024.0 * 1024.0));
  }

  auto all_keys = store.keys();
  if (!all_keys || all_keys->empty()) return 1;
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::size_t> pick(0, all_keys->size() - 1);
  std::vector<double> micros;
  micros.reserve(static_cast<std::size_t>(queries));
  for (int q = 0; q < queries; ++q) {
    const auto& key = (*all_keys)[pick(rng)];
    const auto start = std::chrono::steady_clock::now();
    auto newest = store.newest_runs(key.id, 20);
    const auto stop = std::chrono::steady_clock::now();
    if (!newest ||
        newest->size() != std::min<std::size_t>(20, static_cast<std::size_t>(key.run_count))) {
      std::fprintf(stderr, "query for key %lld returned the wrong rows\n",
                   static_cast<long long>(key.id));
      return 1;
    }
    micros.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  std::sort(micros.begin(), micros.end());
  const auto at = [&](double q) {
    return micros[static_cast<std::size_t>(q * static_cast<double>(micros.size() - 1))];
  };
  std::printf(
      "newest-20 runs of one key (%zu keys, %lld runs): %d queries, p50 %.0f us, p99 %.0f us, max "
      "%.0f us\n",
      all_keys->size(), static_cast<long long>(*store.run_count()), queries, at(0.5), at(0.99),
      micros.back());
  return 0;
}
