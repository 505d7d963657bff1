#include "runners/command_config.hpp"

#include <algorithm>
#include <set>
#include <system_error>

#include "runners/child_process.hpp"

namespace kernelwatch::runners {
namespace {

using core::JsonField;
using nlohmann::json;

constexpr std::string_view kFields[] = {
    "runner",   "name", "command",           "format",  "output", "provider", "timeout",
    "interval", "env",  "working_directory", "confirm", "gpus"};

}  // namespace

bool entry_name_ok(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  const auto lower_or_digit = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (!lower_or_digit(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return lower_or_digit(c) || c == '.' || c == '_' || c == '-'; });
}

bool variable_name_ok(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

namespace {

std::string shown_text(std::string_view text) {
  return "\"" + readable_line(text, 64) + "\"";
}

}  // namespace

core::Result<std::string> read_entry_name(const JsonField& object, std::string_view names) {
  if (!object["name"].present()) {
    return object.error("name is missing (" + std::string(names) + ")");
  }
  std::string name = KW_TRY(object["name"].string());
  if (!entry_name_ok(name)) {
    return object["name"].error(shown_text(name) +
                                " is not 1 to 64 of a-z, 0-9, '.', '_', '-' starting with a "
                                "letter or digit");
  }
  return name;
}

core::Result<CommandEntry> read_command_entry(const JsonField& object,
                                              const EntryReaderServices& services) {
  for (const std::string& key : object.keys()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      if (key == "kernel" || key == "pass" || key == "workloads" || key == "providers" ||
          key == "python" || key == "script") {
        return object[key].error(
            "does not apply to a \"command\" entry (its output names its "
            "benchmarks and workloads)");
      }
      return object[key].error("unknown field");
    }
  }
  CommandEntry entry;
  entry.name = KW_TRY(read_entry_name(object, "it prefixes the benchmarks"));
  if (!object["command"].present()) {
    return object.error(
        "command is missing (the program and its arguments, like "
        "[\"./bench\", \"--benchmark_format=json\"])");
  }
  for (const JsonField& item : KW_TRY(object["command"].array())) {
    std::string arg = KW_TRY(item.string());
    if (arg.find('\0') != std::string::npos) return item.error("contains a NUL byte");
    entry.command.push_back(std::move(arg));
  }
  if (entry.command.empty() || entry.command.front().empty()) {
    return object["command"].error("needs a program as its first element");
  }
  if (!object["format"].present()) {
    std::string known;
    for (const auto f : kOutputFormats)
      known += (known.empty() ? "" : ", ") + std::string(to_string(f));
    return object.error("format is missing (one of " + known + ")");
  }
  entry.format = KW_TRY(object["format"].parsed(parse_output_format));
  entry.output = KW_TRY(object["output"].string_or("stdout"));
  const auto uses_out = [](const std::string& text) {
    return text.find(kOutPlaceholder) != std::string::npos;
  };
  if (entry.output != "stdout") {
    if (!uses_out(entry.output)) {
      return object["output"].error(shown_text(entry.output) +
                                    " is neither \"stdout\" nor a path containing {out}");
    }
    if (std::none_of(entry.command.begin(), entry.command.end(), uses_out)) {
      return object["output"].error(
          "names {out}, but no element of command has {out}: the "
          "program cannot know where to write");
    }
  }
  entry.provider = KW_TRY(object["provider"].string_or(""));
  if (object["provider"].present() && !entry_name_ok(entry.provider)) {
    return object["provider"].error(shown_text(entry.provider) +
                                    " is not 1 to 64 of a-z, 0-9, '.', '_', '-'");
  }
  if (object["timeout"].present()) {
    entry.timeout = KW_TRY(services.duration(object["timeout"], std::chrono::seconds(1)));
  }
  if (object["env"].present()) {
    const JsonField env = KW_TRY(object["env"].object());
    for (const std::string& name : env.keys()) {
      if (!variable_name_ok(name)) {
        return env[name].error("is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
      }
      entry.env.emplace_back(name, KW_TRY(env[name].string()));
    }
  }
  if (object["working_directory"].present()) {
    entry.working_directory = services.resolve(KW_TRY(object["working_directory"].string()));
    std::error_code ec;
    if (!std::filesystem::is_directory(entry.working_directory, ec)) {
      return object["working_directory"].error("\"" + entry.working_directory.string() +
                                               "\" is not a directory");
    }
  }
  const std::string confirm = KW_TRY(object["confirm"].string_or("rerun"));
  if (confirm == "rerun") {
    entry.confirm = ConfirmMode::Rerun;
  } else if (confirm == "next") {
    entry.confirm = ConfirmMode::Next;
  } else {
    return object["confirm"].error(shown_text(confirm) +
                                   " is not \"rerun\" (run the entry again at once) or \"next\" "
                                   "(its next scheduled run confirms)");
  }
  return entry;
}

json command_entry_json(const CommandEntry& entry) {
  json env = json::object();
  // Values of variables that change timings are shown; any other may be a secret.
  for (const auto& [name, value] : entry.env)
    env[name] = changes_timing(name) ? value : "<redacted>";
  json out = {{"runner", std::string(kCommandRunner)},
              {"name", entry.name},
              {"command", entry.command},
              {"format", std::string(to_string(entry.format))},
              {"output", entry.output},
              {"timeout", entry.timeout.count()},
              {"env", std::move(env)},
              {"confirm", entry.confirm == ConfirmMode::Rerun ? "rerun" : "next"}};
  if (!entry.provider.empty()) out["provider"] = entry.provider;
  if (!entry.working_directory.empty()) out["working_directory"] = entry.working_directory.string();
  return out;
}

}  // namespace kernelwatch::runners

namespace kernelwatch::runners {

namespace {

// Its env sets CUDA_VISIBLE_DEVICES: it runs where that says (runners/gpus.hpp: selection_for).
bool pins_a_device(const CommandEntry& entry) {
  return std::any_of(entry.env.begin(), entry.env.end(),
                     [](const auto& v) { return v.first == "CUDA_VISIBLE_DEVICES"; });
}

}  // namespace

core::Result<std::shared_ptr<const SourceEntry>> read_command_source(
    const core::JsonField& object, const EntryReaderServices& services) {
  GpuSelection gpus = KW_TRY(read_gpu_selection(object["gpus"]));
  CommandEntry entry = KW_TRY(read_command_entry(object, services));
  if (pins_a_device(entry) && gpus.given) {
    return object["gpus"].error(
        "and env.CUDA_VISIBLE_DEVICES both choose GPUs: keep one (gpus runs one process per "
        "GPU, each with its own CUDA_VISIBLE_DEVICES)");
  }
  return std::make_shared<const CommandSource>(std::move(entry), std::move(gpus));
}

nlohmann::json CommandSource::to_json(const DurationText& duration) const {
  nlohmann::json out = command_entry_json(entry);
  out["timeout"] = duration(entry.timeout);
  // An entry whose env pins CUDA_VISIBLE_DEVICES runs where that says and cannot also take
  // `gpus`: the logged entry shows its env only, and reads back as itself.
  if (gpus.given || !pins_a_device(entry)) out["gpus"] = gpu_selection_json(gpus);
  return out;
}

std::vector<std::shared_ptr<RunProducer>> CommandSource::producers(CycleHost& host) const {
  auto selected = host.select(gpus, entry.env);
  if (!selected) return {std::make_shared<FailingProducer>(name(), selected.error().message)};
  const RunnerServices& services = host.services();
  return {host.per_gpu(entry.name, *selected,
                       [&](const GpuDevice* gpu, HostIdentity on) -> std::shared_ptr<RunProducer> {
                         CommandContext context;
                         context.probe = gpu == nullptr ? services.probe : [on] { return on; };
                         context.sampler = gpu != nullptr && services.device_sampler
                                               ? services.device_sampler(*gpu)
                                               : services.sampler;
                         context.cancel_fd = services.cancel_fd;
                         if (gpu != nullptr)
                           context.device_env = {{"CUDA_VISIBLE_DEVICES", gpu->visible_id()}};
                         return std::make_shared<CommandProducer>(entry, std::move(context));
                       })};
}

core::Result<std::vector<ListedCase>> CommandSource::list_cases(
    const CommandContext& context) const {
  return list_command(entry, context);
}

}  // namespace kernelwatch::runners
