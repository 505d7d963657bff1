// Evaluation of the detectors on Liger-Kernel's real weekly CI history (data/liger): the
// backtest's alerts, every 10%-or-more move of the large liger series and whether it was found,
// alerts on the large torch/huggingface series (host noise), alerts per key on small workloads.
// Usage: detectors_liger_eval [--confirm none|next] [--table] [--json] [--with-main-branch]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/key.hpp"
#include "detectors/backtest.hpp"
#include "replay/replay.hpp"
#include "runners/liger_import.hpp"
#include "storage/importer.hpp"

namespace {

using namespace kernelwatch;
using detectors::Alert;
using detectors::KeyHistory;

// The hidden size (LayerNorm) or vocabulary (TVD) a workload label spells; 0 when unknown.
long long workload_size(const std::string& label) {
  const auto workload = core::Workload::from_label(label);
  if (!workload) return 0;
  return workload->kernel == "layer_norm" ? workload->hidden : workload->vocab;
}

// Imports the CSVs through the real importer into a scratch database, replays it through the one
// replay `kernelwatch backtest` uses (its alerts, and how long the replay took), and groups its
// runs by key for the per-move analysis.
struct Loaded {
  std::vector<KeyHistory> histories;
  std::vector<Alert> alerts;
  double seconds = 0;
};

core::Result<Loaded> load_histories(const std::vector<std::filesystem::path>& csvs,
                                    const replay::Options& options) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kw-liger-eval-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  auto connection = KW_TRY(storage::Connection::open(dir / "liger.db", storage::OpenMode::Create));
  KW_TRY(storage::import_files(connection, csvs, storage::InvalidPolicy::Abort,
                               &runners::liger_csv_reader()));
  Loaded out;
  const auto started = std::chrono::steady_clock::now();
  auto replayed = KW_TRY(replay::replay(connection, options));
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out.alerts = std::move(replayed.alerts);
  std::stable_sort(out.alerts.begin(), out.alerts.end(), [](const Alert& a, const Alert& b) {
    return a.fired.observed_at < b.fired.observed_at;
  });
  std::map<std::int64_t, KeyHistory> by_key;
  KW_TRY(storage::RunStore(connection).for_each_in_time_order(
      [&](const storage::RunSummary& run) -> core::Status {
        auto [it, fresh] = by_key.try_emplace(run.key_id);
        if (fresh) it->second.key = replayed.labels.at(run.key_id);
        it->second.runs.push_back(replay::observation_of(run));
        return {};
      }));
  for (auto& [id, history] : by_key) out.histories.push_back(std::move(history));
  return out;
}

bool large_liger(const detectors::KeyLabels& key) {
  const long long size = workload_size(key.workload);
  const bool tvd = key.benchmark.rfind("tvd", 0) == 0;
  return key.provider == "liger" && (tvd ? size >= 4096 : size >= 8192);
}

bool large_reference(const detectors::KeyLabels& key) {
  const long long size = workload_size(key.workload);
  const bool tvd = key.benchmark.rfind("tvd", 0) == 0;
  return key.provider != "liger" && (tvd ? size >= 16384 : size >= 4096);
}

bool small_workload(const detectors::KeyLabels& key) {
  return key.benchmark.rfind("layer_norm", 0) == 0 && workload_size(key.workload) <= 4096;
}

std::string day(core::Timestamp t) {
  return core::format_timestamp(t).substr(0, 10);
}

}  // namespace

int main(int argc, char** argv) {
  replay::Options options;
  options.confirm = detectors::ConfirmPolicy::Next;
  bool table = false;
  bool json = false;
  bool main_branch = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--confirm") == 0 && i + 1 < argc) {
      const auto policy = detectors::parse_confirm_policy(argv[++i]);
      if (!policy) {
        std::fprintf(stderr, "%s\n", policy.error().message.c_str());
        return 2;
      }
      options.confirm = *policy;
    } else if (std::strcmp(argv[i], "--table") == 0) {
      table = true;
    } else if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--with-main-branch") == 0) {
      main_branch = true;
    }
  }
  const std::string dir = KW_LIGER_DIR;
  std::vector<std::filesystem::path> csvs = {dir + "/weekly_ci.tvd_layer_norm.csv"};
  if (main_branch) csvs.push_back(dir + "/all_benchmark_data.tvd_layer_norm.csv");
  auto loaded = load_histories(csvs, options);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
    return 1;
  }
  std::vector<KeyHistory>& histories = loaded->histories;
  std::size_t run_count = 0;
  for (const auto& h : histories) run_count += h.runs.size();
  const auto& alerts = loaded->alerts;
  const double seconds = loaded->seconds;

  if (json) {
    std::printf("%s\n", detectors::to_json(alerts).dump(2).c_str());
    return 0;
  }
  const char* policy =
      options.confirm == detectors::ConfirmPolicy::None ? "none" : "next";
  std::printf("## Liger weekly history, --confirm %s\n\n", policy);
  std::printf("%zu keys, %zu runs, %zu alerts; backtest took %.1f ms.\n\n", histories.size(),
              run_count, alerts.size(), seconds * 1e3);
  if (table) std::printf("```\n%s```\n\n", detectors::format_alert_table(alerts).c_str());

  // 1. Every move of 10% or more (against the previous run of the key) in the large liger series.
  std::printf("### Moves of 10%% or more, liger, hidden >= 8192 or vocab >= 4096\n\n");
  std::printf("| key | run | move | outcome |\n|---|---|---:|---|\n");
  std::size_t moves = 0, at_run = 0, at_next = 0, open_already = 0, missed = 0, short_history = 0;
  for (auto history : histories) {
    if (!large_liger(history.key)) continue;
    std::stable_sort(history.runs.begin(), history.runs.end(),
                     [](const auto& a, const auto& b) { return a.observed_at < b.observed_at; });
    // The key's own alerts and its steps inside incidents (a member is its key's alert too).
    std::vector<const Alert*> key_alerts;
    for (const auto& alert : alerts) {
      if (alert.key.display() == history.key.display()) key_alerts.push_back(&alert);
      for (const auto& member : alert.members) {
        if (member.key.display() == history.key.display()) key_alerts.push_back(&member);
      }
    }
    for (std::size_t i = 1; i < history.runs.size(); ++i) {
      const auto& run = history.runs[i];
      const double move = static_cast<double>(run.median.count()) /
                              static_cast<double>(history.runs[i - 1].median.count()) -
                          1;
      if (std::abs(move) < 0.10) continue;
      ++moves;
      const std::string next_id =
          i + 1 < history.runs.size() ? history.runs[i + 1].external_id : "";
      std::string outcome;
      for (const Alert* alert : key_alerts) {
        if (alert->fired.external_id == run.external_id) {
          outcome = "alert (" + std::string(detectors::to_string(alert->kind)) + ", " +
                    std::string(detectors::to_string(alert->direction)) +
                    (alert->incident.empty() ? "" : ", incident member") + ") at this run";
          ++at_run;
          break;
        }
        if (alert->closed_by && alert->closed_by->external_id == run.external_id &&
            alert->state == detectors::AlertState::Resolved) {
          outcome = "resolves the open alert at this run (back in its band)";
          ++at_run;
          break;
        }
      }
      if (outcome.empty()) {
        for (const Alert* alert : key_alerts) {
          if (!next_id.empty() && (alert->fired.external_id == next_id ||
                                   (alert->closed_by && alert->closed_by->external_id == next_id &&
                                    alert->state == detectors::AlertState::Resolved))) {
            outcome = alert->fired.external_id == next_id ? "alert at the next run"
                                                          : "resolve at the next run";
            ++at_next;
            break;
          }
        }
      }
      if (outcome.empty()) {
        for (const Alert* alert : key_alerts) {
          const bool before = alert->fired.observed_at < run.observed_at;
          const bool still_open = !alert->closed_by || [&] {
            for (const auto& r : history.runs) {
              if (r.external_id == alert->closed_by->external_id)
                return r.observed_at >= run.observed_at;
            }
            return false;
          }();
          if (before && still_open) {
            outcome = "alert already open since " + day(alert->fired.observed_at) + " (" +
                      std::string(detectors::to_string(alert->direction)) + ")";
            ++open_already;
            break;
          }
        }
      }
      if (outcome.empty() && i < 3) {
        outcome = "not judgeable: " + std::to_string(i) + " earlier run(s) of this key";
        ++short_history;
      }
      if (outcome.empty() && i + 1 == history.runs.size() &&
          options.confirm == detectors::ConfirmPolicy::Next) {
        outcome = "last run of the history: no next run to confirm it";
        ++short_history;
      }
      if (outcome.empty()) {
        outcome = "**missed**";
        ++missed;
      }
      std::printf("| %s | %s %s | %+.1f%% | %s |\n", history.key.display().c_str(),
                  day(run.observed_at).c_str(), run.implementation_version.c_str(), move * 100,
                  outcome.c_str());
    }
  }
  std::printf(
      "\n%zu moves: %zu found at the run, %zu at the next run, %zu while an alert of the "
      "key was already open, %zu missed, %zu not judgeable (under 3 earlier runs, or nothing to "
      "confirm).\n\n",
      moves, at_run, at_next, open_already, missed, short_history);

  // 2. Large torch/huggingface series: alerts are host noise except at the 2025-10-10 image change.
  std::printf("### Alerts on torch/huggingface, hidden >= 4096 or vocab >= 16384\n\n");
  std::size_t image_change = 0, other = 0;
  for (const auto& alert : alerts) {
    if (!large_reference(alert.key)) continue;
    const bool at_image_change = day(alert.onset.observed_at) == "2025-10-10";
    (at_image_change ? image_change : other) += 1;
    std::printf("- %s%s\n", at_image_change ? "(2025-10-10 image change) " : "",
                detectors::format_alert_line(alert).c_str());
  }
  std::printf("\n%zu alert(s) at the 2025-10-10 image change, %zu elsewhere.\n\n", image_change,
              other);
  // Their steps inside incidents: listed in the incident, never an alert of their own.
  std::size_t grouped = 0;
  for (const auto& alert : alerts) {
    for (const auto& member : alert.members) grouped += large_reference(member.key) ? 1 : 0;
  }
  std::printf("%zu step(s) of these series inside incidents (not alerts of their own).\n\n",
              grouped);

  // 3. Small, launch-bound workloads: alerts per key.
  std::printf("### Small LayerNorm workloads (hidden <= 4096): alerts per key\n\n");
  std::printf(
      "| key | runs | alerts | regressions | improvements | resolved "
      "|\n|---|---:|---:|---:|---:|---:|\n");
  for (const auto& history : histories) {
    if (!small_workload(history.key) || history.runs.size() < 5) continue;
    std::size_t count = 0, up = 0, down = 0, resolved = 0;
    for (const auto& alert : alerts) {
      if (alert.key.display() != history.key.display()) continue;
      ++count;
      (alert.direction == detectors::Direction::Regression ? up : down) += 1;
      resolved += alert.state == detectors::AlertState::Resolved ? 1 : 0;
    }
    std::printf("| %s | %zu | %zu | %zu | %zu | %zu |\n", history.key.display().c_str(),
                history.runs.size(), count, up, down, resolved);
  }

  // 4. Everything else, by kind.
  std::map<std::string, std::size_t> kinds;
  std::size_t incidents = 0, members = 0;
  for (const auto& alert : alerts) {
    ++kinds[std::string(detectors::to_string(alert.kind))];
    incidents += alert.members.empty() ? 0 : 1;
    members += alert.members.size();
  }
  std::printf("\nIncidents: %zu with %zu member step(s).", incidents, members);
  std::printf("\nAlerts by kind:");
  for (const auto& [kind, count] : kinds) std::printf(" %s %zu;", kind.c_str(), count);
  std::printf("\n");
  return 0;
}
