// What a source reader yields per record or row: a run to store, a row skipped by design (a
// memory metric), or an invalid row with the reason. Plain C++ over core types.
#pragma once

#include <cstddef>
#include <string>

#include "core/record.hpp"

namespace kernelwatch::storage {

enum class ItemKind { Run, Skipped, Invalid };

struct SourceItem {
  std::size_t line = 0;  // 1-based line where the record or row starts
  ItemKind kind = ItemKind::Run;
  core::Record record;  // ItemKind::Run
  std::string raw;      // raw source kept with the run; "" when the record is the source
  std::string reason;   // ItemKind::Skipped and ItemKind::Invalid
};

}  // namespace kernelwatch::storage
