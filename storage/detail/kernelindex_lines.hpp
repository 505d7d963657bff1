// Storage-private: kernelindex JSON Lines read one line at a time, for an import of any size in
// flat memory. Bundles ({run, protocol, environment}) become items as they come. Of a stream of
// separate documents only the documents runs share (environments, protocols, workloads,
// implementations) are kept; a run becomes an item as soon as every document it names has been
// read, and a run that comes before its documents is read again in a second pass over the input
// (so a stream in any order needs at most two). Uses nlohmann/json, no SQLite.
#pragma once

#include <functional>

#include "core/error.hpp"
#include "storage/input.hpp"
#include "storage/source_item.hpp"

namespace kernelwatch::storage {

// The input from its start; called once, or twice when runs came before their documents.
using OpenChunks = std::function<core::Result<Chunks>()>;
using EmitItem = std::function<core::Status(const SourceItem&)>;

// Items in line order (runs of the second pass after the first pass's items); the first error
// `emit` returns, or a read error, stops it.
// `name` (the file's) goes into read errors.
[[nodiscard]] core::Status read_kernelindex_lines(const OpenChunks& open, const EmitItem& emit,
                                                  const std::string& name);

// Whether text that starts with this line is read as JSON Lines: its first non-blank line is a
// JSON object on its own. Otherwise it is one JSON document, read whole (read_kernelindex()).
[[nodiscard]] bool starts_json_lines(std::string_view first_line);

}  // namespace kernelwatch::storage
