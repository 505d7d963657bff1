#include "core/run.hpp"

#include <utility>

namespace kernelwatch::core {

Run::Run(Record record, ComparabilityKey key, RunFigures figures)
    : record_(std::move(record)),
      key_(std::move(key)),
      key_digest_(key_.digest()),
      figures_(figures) {}

Result<Run> Run::of(Record record, RunFigures figures) {
  auto key = KW_TRY(key_of(record));
  return Run(std::move(record), std::move(key), figures);
}

Result<std::vector<Run>> runs_of(std::span<const Record> records) {
  std::vector<Run> runs;
  runs.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto run = Run::of(records[i]);
    if (!run) {
      return fail(run.error().code, "record " + std::to_string(i) + ": " + run.error().message);
    }
    runs.push_back(std::move(*run));
  }
  return runs;
}

}  // namespace kernelwatch::core
