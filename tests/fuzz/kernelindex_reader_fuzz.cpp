// Fuzz target: the kernelindex reader (`kernelwatch import` of .json/.jsonl): one record, an
// array or JSON Lines. Every record it accepts must survive what import does next: its key, its
// canonical JSON (dump), and parsing that JSON back to the same key.
#include "core/digest.hpp"
#include "core/key.hpp"
#include "core/record.hpp"
#include "storage/kernelindex_reader.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kernelwatch;
  const auto items = storage::read_kernelindex(fuzz::text_of(data, size));
  for (const auto& item : items) {
    if (item.kind != storage::ItemKind::Run) continue;
    const auto key = core::key_of(item.record);
    if (!key) continue;
    const std::string stored = core::canonical_json(core::to_json(item.record));
    // What the store keeps must read back (a stored row that cannot be read was issue #15).
    const auto again = storage::read_kernelindex(stored);
    if (again.size() != 1 || again[0].kind != storage::ItemKind::Run) {
      fuzz::invariant_failed("an accepted record does not read back from its stored JSON");
    }
    const auto key_again = core::key_of(again[0].record);
    if (!key_again || key_again->digest() != key->digest()) {
      fuzz::invariant_failed("an accepted record's key changes through the store");
    }
  }
  return 0;
}
