// The config reader of a `"runner": "command"` entry (docs/CONFIG.md), kept with the runner it
// configures: config/ hands it the entry's JSON and the two things only the config loader knows
// (how durations are written, where relative paths start). Level 2: core/ (JsonField).
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

namespace kernelwatch::runners {

struct EntryReaderServices {
  // A duration string of at least `minimum` ("20m"), with the config's own messages.
  std::function<core::Result<std::chrono::milliseconds>(const core::JsonField&,
                                                        std::chrono::milliseconds minimum)>
      duration;
  // A path relative to the config file's directory, made absolute.
  std::function<std::filesystem::path(const std::string&)> resolve;
  // A value as the config's messages quote it (never one that may be a secret: a URL).
  std::function<std::string(std::string_view)> shown;
};

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

}  // namespace kernelwatch::runners
