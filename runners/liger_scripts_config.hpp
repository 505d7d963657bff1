// The config entry of the liger-scripts source (`"runner": "liger-scripts"`, docs/CONFIG.md), kept
// with the runner it configures: its reader (config/ hands it the entry's JSON and how durations
// and paths are read there), its logged form and its producer (runners/source_entry.hpp).
// Level 2: core/ (JsonField).
#pragma once

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "runners/liger_scripts.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::runners {

// Every field but `interval` (the schedule's). Errors name the field.
[[nodiscard]] core::Result<LigerScriptsEntry> read_liger_scripts_entry(
    const core::JsonField& object, const EntryReaderServices& services);

// The effective entry for the logged config: env values only for variables that change timings.
[[nodiscard]] nlohmann::json liger_scripts_entry_json(const LigerScriptsEntry& entry);

// A liger-scripts entry of the config: one process whose scripts choose their own device.
class LigerScriptsSource final : public SourceEntry {
 public:
  explicit LigerScriptsSource(LigerScriptsEntry entry) : entry(std::move(entry)) {}
  [[nodiscard]] std::string_view runner() const override { return kLigerScriptsRunner; }
  [[nodiscard]] std::string name() const override { return entry.name; }
  [[nodiscard]] nlohmann::json to_json(const DurationText& duration) const override;
  [[nodiscard]] std::vector<std::shared_ptr<RunProducer>> producers(CycleHost& host) const override;

  LigerScriptsEntry entry;
};

[[nodiscard]] core::Result<std::shared_ptr<const SourceEntry>> read_liger_scripts_source(
    const core::JsonField& object, const EntryReaderServices& services);

// The liger-scripts source in the catalogue of run sources (runners/sources.hpp).
inline constexpr RunSource kLigerScriptsRunSource{
    .source = kLigerScriptsSource,
    .runner = kLigerScriptsRunner,
    .gpus = false,
    .no_gpus =
        "a liger-scripts entry runs where its scripts' own device choice puts it (set "
        "CUDA_VISIBLE_DEVICES in its env)",
    .read = read_liger_scripts_source};

}  // namespace kernelwatch::runners
