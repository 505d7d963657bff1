// The config entry of the command source (`"runner": "command"`, docs/CONFIG.md), kept with the
// runner it configures: its reader (config/ hands it the entry's JSON and what only the config
// loader knows: how durations are written, where relative paths start), its logged form, and its
// producers for a cycle, one per GPU it runs on (runners/source_entry.hpp). Level 2: core/
// (JsonField).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "runners/command.hpp"
#include "runners/gpus.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::runners {

// 1 to 64 of a-z, 0-9, '.', '_', '-' starting with a letter or digit (an entry's name, a
// provider).
[[nodiscard]] bool entry_name_ok(std::string_view name);
// An entry's "name": present, a string, and entry_name_ok; `names` says what it names in the
// error when it is missing ("it prefixes the benchmarks").
[[nodiscard]] core::Result<std::string> read_entry_name(const core::JsonField& object,
                                                        std::string_view names);
// [A-Za-z_][A-Za-z0-9_]*
[[nodiscard]] bool variable_name_ok(std::string_view name);

// Every field but `interval` (the schedule's, read by the config loader for every entry).
// Errors name the field ("benchmarks[2].output: ...").
[[nodiscard]] core::Result<CommandEntry> read_command_entry(const core::JsonField& object,
                                                            const EntryReaderServices& services);

// The effective entry for the logged config: env values shown only for variables that change
// timings (others may be secrets); the timeout in milliseconds.
[[nodiscard]] nlohmann::json command_entry_json(const CommandEntry& entry);

// A command entry of the config: its program, and the GPUs it runs on (`gpus`, default every GPU
// of the host; one process per GPU at once).
class CommandSource final : public SourceEntry {
 public:
  CommandSource(CommandEntry entry, GpuSelection gpus)
      : entry(std::move(entry)), gpus(std::move(gpus)) {}
  [[nodiscard]] std::string_view runner() const override { return kCommandRunner; }
  [[nodiscard]] std::string name() const override { return entry.name; }
  [[nodiscard]] nlohmann::json to_json(const DurationText& duration) const override;
  [[nodiscard]] std::vector<std::shared_ptr<RunProducer>> producers(CycleHost& host) const override;
  // Its cases as its program lists them (list_command).
  [[nodiscard]] core::Result<std::vector<ListedCase>> list_cases(
      const CommandContext& context) const override;

  CommandEntry entry;
  GpuSelection gpus;
};

// Every field (read_command_entry) and `gpus`, which an env.CUDA_VISIBLE_DEVICES must not
// contradict.
[[nodiscard]] core::Result<std::shared_ptr<const SourceEntry>> read_command_source(
    const core::JsonField& object, const EntryReaderServices& services);

// The command source in the catalogue of run sources (runners/sources.hpp).
inline constexpr RunSource kCommandRunSource{
    .source = kCommandSource, .runner = kCommandRunner, .gpus = true, .read = read_command_source};

}  // namespace kernelwatch::runners
