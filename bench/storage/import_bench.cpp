// Times `import` of one file into a fresh database, several times, and prints the median time
// and rows per second. Usage: kw_bench_import FILE [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "runners/liger_import.hpp"
#include "storage/importer.hpp"

int main(int argc, char** argv) {
  using namespace kernelwatch;
  if (argc < 2) {
    std::fprintf(stderr, "usage: kw_bench_import FILE [REPEATS]\n");
    return 2;
  }
  const std::filesystem::path input = argv[1];
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const auto dir = std::filesystem::temp_directory_path() / "kw-bench-import";
  std::vector<double> seconds;
  std::size_t rows = 0;
  std::size_t inserted = 0;
  std::size_t derived = 0;
  for (int i = 0; i < repeats; ++i) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto start = std::chrono::steady_clock::now();
    auto store = storage::Connection::open(dir / "kw.db", storage::OpenMode::Create);
    if (!store) {
      std::fprintf(stderr, "%s\n", store.error().message.c_str());
      return 1;
    }
    const std::vector<std::filesystem::path> paths = {input};
    auto report = storage::import_files(*store, paths, storage::InvalidPolicy::Abort,
                                        &runners::liger_csv_reader());
    const auto stop = std::chrono::steady_clock::now();
    if (!report) {
      std::fprintf(stderr, "%s\n", report.error().message.c_str());
      return 1;
    }
    rows = report->read;
    inserted = report->inserted;
    derived = report->derived;
    seconds.push_back(std::chrono::duration<double>(stop - start).count());
  }
  std::filesystem::remove_all(dir);
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf(
      "import %s: %zu rows read, %zu runs stored (%zu the fast way); median %.3f s of %d (min "
      "%.3f, max %.3f); %.0f rows/s\n",
      input.filename().c_str(), rows, inserted, derived, median, repeats, seconds.front(),
      seconds.back(), static_cast<double>(rows) / median);
  return 0;
}
