// The config reader of a `"runner": "liger-scripts"` entry (docs/CONFIG.md), kept with the runner
// it configures: config/ hands it the entry's JSON and how durations and paths are read there
// (runners/command_config.hpp). Level 2: core/ (JsonField).
#pragma once

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "runners/command_config.hpp"
#include "runners/liger_scripts.hpp"

namespace kernelwatch::runners {

// Every field but `interval` (the schedule's). Errors name the field.
[[nodiscard]] core::Result<LigerScriptsEntry> read_liger_scripts_entry(
    const core::JsonField& object, const EntryReaderServices& services);

// The effective entry for the logged config: env values only for variables that change timings.
[[nodiscard]] nlohmann::json liger_scripts_entry_json(const LigerScriptsEntry& entry);

}  // namespace kernelwatch::runners
