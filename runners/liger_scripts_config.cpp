#include "runners/liger_scripts_config.hpp"

#include <algorithm>

#include "runners/child_process.hpp"
#include "runners/command_config.hpp"

namespace kernelwatch::runners {
namespace {

using core::JsonField;
using nlohmann::json;

constexpr std::string_view kFields[] = {"runner", "name",    "checkout", "python", "scripts",
                                        "args",   "timeout", "interval", "env",    "confirm"};

std::string shown_text(std::string_view text) {
  return "\"" + readable_line(text, 100) + "\"";
}

// "benchmark/scripts/benchmark_rms_norm.py": inside the checkout's scripts folder, a .py file.
bool script_path_ok(const std::string& script) {
  if (!script.starts_with(kLigerScriptsFolder) || !script.ends_with(".py")) return false;
  const std::string file = script.substr(kLigerScriptsFolder.size());
  return !file.empty() && file.find('/') == std::string::npos && file != ".py" &&
         file.find('\0') == std::string::npos && file.front() != '.';
}

}  // namespace

core::Result<LigerScriptsEntry> read_liger_scripts_entry(const JsonField& object,
                                                         const EntryReaderServices& services) {
  for (const std::string& key : object.keys()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      if (key == "command" || key == "format" || key == "output" || key == "kernel" ||
          key == "pass" || key == "workloads" || key == "providers") {
        return object[key].error(
            "does not apply to a \"liger-scripts\" entry (Liger's scripts name their kernels, "
            "workloads and providers in the rows they write)");
      }
      return object[key].error("unknown field");
    }
  }
  LigerScriptsEntry entry;
  entry.name = KW_TRY(read_entry_name(object, "it names the entry"));
  if (!object["checkout"].present()) {
    return object.error(
        "checkout is missing (the Liger-Kernel checkout whose benchmark/scripts run, like "
        "\"/opt/Liger-Kernel\")");
  }
  const std::string checkout = KW_TRY(object["checkout"].string());
  if (checkout.empty()) return object["checkout"].error("is empty");
  // Taken relative to the config file; a missing checkout is a failed run, not a config error.
  entry.checkout = services.resolve(checkout);
  if (!object["python"].present()) {
    return object.error(
        "python is missing (the interpreter of a venv with torch, triton and liger-kernel, like "
        "\"/opt/venvs/liger/bin/python3\")");
  }
  const std::string python = KW_TRY(object["python"].string());
  if (python.empty()) return object["python"].error("is empty");
  entry.python = python.find('/') == std::string::npos ? std::filesystem::path(python)
                                                       : services.resolve(python);
  const JsonField scripts = object["scripts"];
  if (!scripts.present()) {
    return object.error("scripts is missing (\"all\", or a list like [\"" +
                        std::string(kLigerScriptsFolder) + "benchmark_rms_norm.py\"])");
  }
  if (scripts.value().is_string()) {
    if (KW_TRY(scripts.string()) != "all") {
      return scripts.error("is \"all\" or a list of scripts");
    }
  } else {
    const auto items = KW_TRY(scripts.array("\"all\" or an array of scripts"));
    if (items.empty()) return scripts.error("lists no script (\"all\" runs every one)");
    for (const JsonField& item : items) {
      const std::string script = KW_TRY(item.string());
      if (!script_path_ok(script)) {
        return item.error(shown_text(script) + " is not a script of the checkout's " +
                          std::string(kLigerScriptsFolder) + " folder (like \"" +
                          std::string(kLigerScriptsFolder) + "benchmark_rms_norm.py\")");
      }
      if (std::find(entry.scripts.begin(), entry.scripts.end(), script) != entry.scripts.end()) {
        return item.error(shown_text(script) + " is listed twice");
      }
      entry.scripts.push_back(script);
    }
  }
  if (object["args"].present()) {
    for (const JsonField& item : KW_TRY(object["args"].array())) {
      std::string arg = KW_TRY(item.string());
      if (arg.find('\0') != std::string::npos) return item.error("contains a NUL byte");
      entry.args.push_back(std::move(arg));
    }
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
  // A script cannot rerun one case: how a breach is confirmed is the config's choice, always said.
  const std::string why =
      " (\"rerun\": the whole entry runs again at once; \"next\": its next scheduled run "
      "confirms)";
  if (!object["confirm"].present()) return object.error("confirm is missing" + why);
  const std::string confirm = KW_TRY(object["confirm"].string());
  if (confirm == "rerun") {
    entry.confirm = ConfirmMode::Rerun;
  } else if (confirm == "next") {
    entry.confirm = ConfirmMode::Next;
  } else {
    return object["confirm"].error(shown_text(confirm) + " is not one of" + why);
  }
  return entry;
}

json liger_scripts_entry_json(const LigerScriptsEntry& entry) {
  json env = json::object();
  for (const auto& [name, value] : entry.env)
    env[name] = changes_timing(name) ? value : "<redacted>";
  return json{{"runner", std::string(kLigerScriptsRunner)},
              {"name", entry.name},
              {"checkout", entry.checkout.string()},
              {"python", entry.python.string()},
              {"scripts", entry.all() ? json("all") : json(entry.scripts)},
              {"args", entry.args},
              {"env", std::move(env)},
              {"confirm", entry.confirm == ConfirmMode::Rerun ? "rerun" : "next"}};
}

}  // namespace kernelwatch::runners

namespace kernelwatch::runners {

core::Result<std::shared_ptr<const SourceEntry>> read_liger_scripts_source(
    const core::JsonField& object, const EntryReaderServices& services) {
  return std::make_shared<const LigerScriptsSource>(
      KW_TRY(read_liger_scripts_entry(object, services)));
}

nlohmann::json LigerScriptsSource::to_json(const DurationText& duration) const {
  nlohmann::json out = liger_scripts_entry_json(entry);
  out["timeout"] = duration(entry.timeout);
  // No `gpus`: this runner takes none (its scripts choose their device), so the logged entry
  // reads back as itself.
  return out;
}

std::vector<std::shared_ptr<RunProducer>> LigerScriptsSource::producers(CycleHost& host) const {
  const RunnerServices& services = host.services();
  CommandContext context;
  context.probe = services.probe;
  context.sampler = services.sampler;
  context.cancel_fd = services.cancel_fd;
  return {std::make_shared<LigerScriptsProducer>(entry, std::move(context))};
}

}  // namespace kernelwatch::runners
