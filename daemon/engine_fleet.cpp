// Engine::read_fleet_controls() (storage.fleet_controls, docs/FLEET.md): before a close decides
// its held steps, the other hosts' runs of each step's key around the step are read from their
// schemas of the same PostgreSQL database, stored in this host's schema as controls
// (storage::Judgement::control: never judged here, no part of this host's cycles, tagged with the
// step they were read for) and given to the Watch, which decides the steps by them and by the
// fleet's runs it keeps from before (detectors/fleet.hpp). Every replay gives the stored controls
// to the same steps (detectors::Watch::add_fleet_run), so the live decision and every replay
// agree. A run already stored here (a seed, a control read for an earlier step, or a run at the
// same instant as one of this host's) is not given again: the Watch has it, or never had it.
// A rebuild whose replay ends with steps still held (a cycle the daemon never closed) reads the
// fleet for them the same way before the replay's last close (engine_rebuild.cpp).
#include <utility>

#include "daemon/engine.hpp"
#include "storage/fleet.hpp"

namespace kernelwatch::daemon {

core::Status Engine::read_fleet_controls(Transaction& tx, detectors::Watch& watch) {
  if (!options_.fleet_controls || !options_.fleet_location || !store_->is_postgresql()) return {};
  const std::vector<detectors::HeldStep> held = watch.held_steps();
  std::vector<storage::ControlRequest> requests;
  std::vector<const detectors::HeldStep*> asked;
  for (const auto& step : held) {
    const detectors::Trigger& trigger = *step.trigger;
    if (trigger.kind != core::AlertKind::Step || trigger.run.placement.empty() ||
        trigger.run.placement->host.empty()) {
      continue;  // only a host's step of its own can be against its fleet
    }
    requests.push_back({step.key->digest,
                        trigger.onset.observed_at - options_.parameters.controls.cycle_gap,
                        trigger.run.observed_at});
    asked.push_back(&step);
  }
  if (requests.empty()) return {};
  auto read = storage::fleet_controls(*store_, options_.fleet_location, requests,
                                      detectors::kFleetRunsNow, detectors::kFleetRunsBefore);
  if (!read) {
    fleet_notes_.push_back(
        "the fleet's runs could not be read, so this close's steps are judged "
        "without them: " +
        read.error().message);
    return {};
  }
  for (auto& problem : read->problems) fleet_notes_.push_back(std::move(problem));
  storage::RunStore store(*store_);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const detectors::HeldStep& step = *asked[i];
    const core::Timestamp for_step = step.trigger->run.observed_at;
    for (auto& record : read->runs[i]) {
      auto run = core::Run::of(std::move(record));
      if (!run || run->key_digest() != requests[i].key_digest) continue;  // read another way
      const core::Timestamp at = run->record().run.observed_at;
      const auto inserted = KW_TRY(store.insert_run(tx, *run, ""));
      if (inserted.outcome == storage::InsertOutcome::Duplicate) continue;
      KW_TRY(
          store.record_judgement(tx, inserted.key_id, at, storage::Judgement::control(for_step)));
      touched_.insert(inserted.key_id);
      watch.add_fleet_run(
          *step.key,
          detectors::observation_from_record(
              run->record(), core::implementation_version(run->record().run.metadata)),
          for_step);
    }
  }
  return {};
}

}  // namespace kernelwatch::daemon
