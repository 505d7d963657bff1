#include "daemon/discover_command.hpp"

#include <map>
#include <ostream>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "core/key.hpp"
#include "core/time.hpp"
#include "daemon/format.hpp"
#include "daemon/schedule.hpp"
#include "runners/command.hpp"
#include "runners/source_entry.hpp"
#include "runners/sources.hpp"
#include "storage/connection.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

core::Timestamp now() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

// The history of every key in the config's database, by key digest; empty when there is none yet.
std::map<std::string, storage::KeySummary> stored_keys(const config::Config& c, std::ostream& err) {
  std::map<std::string, storage::KeySummary> out;
  std::error_code ec;
  if (c.storage.postgresql.empty() && !std::filesystem::exists(c.storage.path, ec)) return out;
  auto store = storage::Connection::open(c.storage.location(), storage::OpenMode::ReadOnly);
  if (!store) {
    err << "kernelwatch discover: history not shown: " << store.error().message << '\n';
    return out;
  }
  auto keys = storage::RunStore(*store).keys();
  if (!keys) {
    err << "kernelwatch discover: history not shown: " << keys.error().message << '\n';
    return out;
  }
  for (auto& k : *keys) out.emplace(k.key.digest(), std::move(k));
  return out;
}

// Runs stored for a listed case on this host, over every protocol (a listing runs nothing, so it
// cannot know the harness version a run's protocol would name).
std::int64_t history_of(const runners::ListedCase& c, const std::string& environment,
                        const std::map<std::string, storage::KeySummary>& history) {
  std::int64_t runs = 0;
  for (const auto& [digest, k] : history) {
    if (k.key.benchmark.label != c.benchmark || k.key.provider.label != c.provider ||
        k.key.environment.label != environment) {
      continue;
    }
    if (c.workload.empty() ? runners::pytest_id_matches(c.case_id, k.key.workload.label)
                           : k.key.workload.label == c.workload) {
      runs += k.run_count;
    }
  }
  return runs;
}

// discover --list: each entry's cases from its harness, nothing run.
int list_entries(const config::Config& c, const std::set<std::string>& entries,
                 const DiscoverOptions& options, std::ostream& out, std::ostream& err) {
  const auto history = stored_keys(c, err);
  runners::CommandContext context;
  context.now = now;
  context.probe = runners::system_host_probe();
  const std::string environment = core::environment_label(context.probe().hardware);
  int status = 0;
  bool unknown_workload = false;
  json listed = json::array();
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : c.benchmarks) {
    const std::string name = entry_name(b);
    if (!entries.contains(name)) continue;
    // A command entry lists what its program would run; another source says it cannot.
    auto cases = b.source->list_cases(context);
    if (!cases) {
      err << "kernelwatch discover: " << name << ": " << cases.error().message << '\n';
      status = 1;
      continue;
    }
    for (const auto& listed_case : *cases) {
      const std::int64_t runs = history_of(listed_case, environment, history);
      unknown_workload = unknown_workload || listed_case.workload.empty();
      listed.push_back(
          {{"entry", name},
           {"case", listed_case.case_id},
           {"benchmark", listed_case.benchmark},
           {"provider", listed_case.provider},
           {"workload", listed_case.workload.empty() ? json(nullptr) : json(listed_case.workload)},
           {"environment", environment},
           {"historyRuns", runs}});
      rows.push_back({name, listed_case.case_id, listed_case.benchmark, listed_case.provider,
                      listed_case.workload.empty() ? "?" : listed_case.workload, environment,
                      runs == 0 ? "new" : std::to_string(runs) + " run(s)"});
    }
  }
  if (options.format == OutputFormat::Json) {
    out << listed.dump(2) << '\n';
    return status;
  }
  print_table(out, {"ENTRY", "CASE", "BENCHMARK", "PROVIDER", "WORKLOAD", "ENVIRONMENT", "HISTORY"},
              rows);
  out << rows.size() << " case(s) listed; nothing was run\n";
  if (unknown_workload) {
    out << "WORKLOAD ?: pytest names a case by its parameter values; the workload label (the "
           "parameter names and values) comes with its first run\n";
  }
  return status;
}

}  // namespace

int run_discover(const DiscoverOptions& options, std::ostream& out, std::ostream& err) {
  auto config = config::load_config(options.config);
  if (!config) {
    err << "kernelwatch discover: " << config.error().message << '\n';
    return 1;
  }
  std::set<std::string> entries;
  for (const auto& b : config->benchmarks) {
    const std::string name = entry_name(b);
    if (!options.entry.empty() && name != options.entry) continue;
    if (const auto why = b.source->not_discovered()) {
      if (!options.entry.empty()) {
        err << "kernelwatch discover: " << name << " " << *why << '\n';
        return 1;
      }
      continue;
    }
    entries.insert(name);
  }
  if (entries.empty()) {
    err << "kernelwatch discover: "
        << (options.entry.empty()
                ? "the config has no " +
                      runners::join_names(runners::source_catalogue().runners(), ", ", " or ") +
                      " entry"
                : "the config has no entry named \"" + options.entry + "\"")
        << '\n';
    return 1;
  }
  if (options.list) return list_entries(*config, entries, options, out, err);
  const auto history = stored_keys(*config, err);
  const Plan plan = cycle_plan(*config, kernels::Backend::Cpu,
                               {runners::nvml_sampler(),
                                runners::system_host_probe(),
                                -1,
                                runners::system_gpu_inventory(),
                                runners::nvml_device_samplers(),
                                runners::this_harness_host(),
                                {}},
                               entries);
  int status = 0;
  json records = json::array();
  std::vector<std::vector<std::string>> rows;
  for (const auto& source : plan) {
    auto produced = source.producer->run(now);
    if (!produced) {
      err << "kernelwatch discover: " << source.entry << ": " << produced.error().message << '\n';
      status = 1;
      continue;
    }
    if (!produced->error.empty()) {
      err << "kernelwatch discover: " << source.entry << ": " << produced->error << '\n';
    }
    for (const auto& produced_run : produced->runs) {
      const core::ComparabilityKey* key = &produced_run.key();
      const core::Record& run = produced_run.record();
      const auto known = history.find(produced_run.key_digest());
      const std::string stored =
          known == history.end()
              ? "new"
              : std::to_string(known->second.run_count) + " run(s) since " +
                    core::format_timestamp(known->second.first_observed).substr(0, 10);
      std::string result = std::string(core::to_string(run.run.status));
      if (run.run.median) {
        result += " " + format_duration(*run.run.median);
      } else if (!run.run.status_reason.empty()) {
        result += ": " + run.run.status_reason;
      }
      if (options.format == OutputFormat::Json) {
        records.push_back({{"entry", source.entry},
                           {"benchmark", key->benchmark.label},
                           {"provider", key->provider.label},
                           {"workload", key->workload.label},
                           {"environment", key->environment.label},
                           {"protocol", key->protocol.label},
                           {"key", produced_run.key_digest()},
                           {"status", std::string(core::to_string(run.run.status))},
                           {"historyRuns", known == history.end() ? 0 : known->second.run_count}});
      }
      rows.push_back({source.entry, key->benchmark.label, key->provider.label, key->workload.label,
                      key->environment.label, stored, result});
    }
  }
  if (options.format == OutputFormat::Json) {
    out << records.dump(2) << '\n';
    return status;
  }
  print_table(out,
              {"ENTRY", "BENCHMARK", "PROVIDER", "WORKLOAD", "ENVIRONMENT", "HISTORY", "THIS RUN"},
              rows);
  out << rows.size() << " key(s); nothing was stored\n";
  return status;
}

}  // namespace kernelwatch::daemon
