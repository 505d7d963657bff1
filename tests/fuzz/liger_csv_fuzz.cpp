// Fuzz target: the Liger-Kernel benchmark CSV reader (`kernelwatch import` of .csv). Every row
// it turns into a run must have a key and a canonical JSON, and that JSON must read back.
#include "core/digest.hpp"
#include "core/key.hpp"
#include "core/record.hpp"
#include "runners/liger_csv.hpp"
#include "storage/kernelindex_reader.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kernelwatch;
  const auto items = runners::read_liger_csv(fuzz::text_of(data, size), "fuzz.csv");
  if (!items) return 0;
  for (const auto& item : *items) {
    if (item.kind != storage::ItemKind::Run) continue;
    const auto key = core::key_of(item.record);
    if (!key) continue;
    const std::string stored = core::canonical_json(core::to_json(item.record));
    const auto again = storage::read_kernelindex(stored);
    if (again.size() != 1 || again[0].kind != storage::ItemKind::Run) {
      fuzz::invariant_failed("a CSV row's record does not read back from its stored JSON");
    }
  }
  return 0;
}
