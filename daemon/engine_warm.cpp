// Engine::warm_start() (storage.warm_start, docs/FLEET.md): a key new to this host starts from
// the fleet's newest runs of it in the other hosts' schemas of the same PostgreSQL database,
// instead of from nothing. Those runs are stored in this host's schema marked as seeds
// (storage::Judgement::seed: never judged here, no part of this host's cycles), and the key's
// detector is built from them only when they are quiet (no alert, no step, no run awaiting
// confirmation). Every later replay builds the key from the stored seeds the same way
// (detectors::Watch::observe_seed), wherever they fall among this host's runs, so the live state
// and every replay agree. Runs from the last cycle_gap before the key's first run here are left
// out.
#include <algorithm>
#include <map>
#include <utility>

#include "daemon/engine.hpp"
#include "storage/fleet.hpp"

namespace kernelwatch::daemon {

std::string describe_warm_start(const std::string& key_display, const WarmStart& warm) {
  std::string hosts;
  for (const auto& host : warm.hosts) hosts += (hosts.empty() ? "" : ", ") + host;
  return key_display + ": new to this host; started from the fleet's " + std::to_string(warm.runs) +
         " newest run(s) of it (host(s) " + hosts +
         "), stored here as its seeds (storage.warm_start)";
}

core::Status Engine::warm_start(std::span<const core::Run> runs) {
  if (!options_.warm_start || !options_.fleet_location || !store_->is_postgresql()) return {};
  // The keys of the batch this host has no run of, each with the instant its seeds must be older
  // than: its first run's observedAt less cycle_gap.
  std::map<std::string, storage::SeedRequest> wanted;
  std::map<std::string, std::string> names;  // what the log calls each
  for (const auto& run : runs) {
    if (key_ids_.contains(detectors::key_labels(run).identity())) continue;
    const core::Timestamp before =
        run.record().run.observed_at - options_.parameters.controls.cycle_gap;
    auto [it, fresh] = wanted.try_emplace(run.key_digest(), storage::SeedRequest{});
    if (fresh || before < it->second.before) it->second = {run.key_digest(), before};
    names.try_emplace(run.key_digest(), run.key().display());
  }
  if (wanted.empty()) return {};
  std::vector<storage::SeedRequest> requests;
  for (auto& [digest, request] : wanted) requests.push_back(std::move(request));
  const auto& band = options_.parameters.band;
  auto seeds = storage::fleet_seeds(*store_, options_.fleet_location, requests,
                                    std::max(band.window, band.noise_window), band.min_history);
  if (!seeds) {
    warm_notes_.push_back("the fleet's runs could not be read, so new keys start cold: " +
                          seeds.error().message);
    return {};
  }
  warm_notes_ = std::move(seeds->problems);
  for (const auto& [digest, name] : names) {
    if (seeds->keys.contains(digest)) continue;
    warm_notes_.push_back(name + " started cold: the other hosts hold fewer than " +
                          std::to_string(band.min_history) +
                          " passed runs of it from before its first run here");
  }

  // Each key's detector from its seeds (adopted when quiet), then the seeds stored, in one
  // transaction: a failure leaves the Watch ahead of the store, which the caller replays.
  struct Adopted {
    std::vector<core::Run> runs;
    core::KeyLabels labels;
  };
  std::vector<Adopted> adopted;
  for (auto& [digest, key] : seeds->keys) {
    std::vector<core::Run> seed_runs;
    std::vector<detectors::Observation> observations;
    for (auto& record : key.records) {
      auto run = core::Run::of(std::move(record));
      if (!run || run->key_digest() != digest) continue;  // (its key read another way)
      observations.push_back(detectors::observation_from_record(
          run->record(), core::implementation_version(run->record().run.metadata)));
      seed_runs.push_back(std::move(*run));
    }
    if (seed_runs.empty()) continue;
    core::KeyLabels labels = detectors::key_labels(seed_runs.front());
    if (const auto why_not = watch_.seed(labels, observations, replay::kHistoryConfirm)) {
      warm_notes_.push_back(labels.display() + " started cold: the fleet's newest runs of it (" +
                            std::to_string(seed_runs.size()) + " from " +
                            std::to_string(key.hosts.size()) +
                            " host(s)) are no baseline: " + *why_not);
      continue;
    }
    WarmStart warm{seed_runs.size(), std::move(key.hosts)};
    warm_.emplace(labels.identity(), std::move(warm));
    adopted.push_back(Adopted{std::move(seed_runs), std::move(labels)});
  }
  if (adopted.empty()) return {};
  storage::RunStore store(*store_);
  auto tx = KW_TRY(store_->begin());
  for (const auto& key : adopted) {
    for (const auto& run : key.runs) {
      const core::Timestamp at = run.record().run.observed_at;
      const auto inserted = KW_TRY(store.insert_run(tx, run, ""));
      KW_TRY(store.record_judgement(tx, inserted.key_id, at, storage::Judgement::seed(at)));
      touched_.insert(inserted.key_id);
      key_ids_[key.labels.identity()] = inserted.key_id;
      identities_[inserted.key_id] = key.labels.identity();
    }
    index_name(key.labels);
  }
  return tx.commit();
}

}  // namespace kernelwatch::daemon
