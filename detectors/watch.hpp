// The detectors over every key: one KeyMonitor per key, the cycles the controls compare, and the
// cycle's close: a key's step is held until then, and the controls decide whether it is the
// key's own alert or a member of an incident (one per environment and cycle: many keys stepped
// together, or its reference or subject moved with it, or a host shift moved the references of
// its duration). A member is still its key's open alert (the key knows it breached), is never
// notified by itself, and its state is the incident's business: acknowledging or rebaselining the
// incident does it to every open member, and the incident closes when its last member does.
// What the daemon keeps and what every replay of stored history runs. Pure; standard library,
// core, detectors/.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "detectors/alert_state.hpp"
#include "detectors/controls.hpp"
#include "detectors/fleet.hpp"
#include "detectors/parameters.hpp"

namespace kernelwatch::detectors {

class Watch {
 public:
  explicit Watch(DetectorParameters parameters);

  // A run of `key`, in observed_at order per key. A key seen for the first time gets a monitor
  // with this watch's parameters; `confirm` is the policy for this run (its source's). Events:
  // resolves and failed-run alerts at once; a trigger is held for close_cycle() (a run of a key
  // that still holds one closes the cycle first, and those events come first).
  [[nodiscard]] MonitorStep observe(const KeyLabels& key, const Observation& run,
                                    ConfirmPolicy confirm);
  // A key this watch has never seen, started from runs of it judged elsewhere (a new host's
  // fleet seeds, storage.warm_start), oldest first, each observed as observe_seed() observes
  // it (`confirm`): adopted only when they are quiet, so that a replay of the stored seeds among
  // the other keys' runs leaves the key as this does. nullopt when adopted; else why not (an alert
  // or a step in them, their newest run awaiting confirmation, a key already watched) and the
  // watch is unchanged. Nothing is recorded for the controls: seeds are no cycle of this watch.
  [[nodiscard]] std::optional<std::string> seed(const KeyLabels& key,
                                                std::span<const Observation> runs,
                                                ConfirmPolicy confirm);
  // One stored seed of a key as a replay reads it: observed as observe() does, with nothing
  // recorded for the controls, so that the replay builds the key as seed() did. Seeds are kept
  // as the fleet's runs of the key too (detectors/fleet.hpp).
  [[nodiscard]] MonitorStep observe_seed(const KeyLabels& key, const Observation& run,
                                         ConfirmPolicy confirm);
  // Another host's run of `key` read for its held step confirmed at `for_step` (the step's
  // Trigger::run.observed_at; storage.fleet_controls): the next close_cycle() decides the step
  // by it and the fleet's runs kept from before (detectors/fleet.hpp), then keeps it.
  void add_fleet_run(const KeyLabels& key, const Observation& run, core::Timestamp for_step);
  // The steps held for the next close, in the order they came: what the fleet's runs are read
  // for. Valid until the next observe() or close.
  [[nodiscard]] std::vector<HeldStep> held_steps() const;
  // An operator action on an open alert of the key with this identity (KeyLabels::identity()).
  [[nodiscard]] std::vector<AlertEvent> act(const std::string& key_identity,
                                            const core::AlertId& alert_id, OperatorAction action,
                                            core::Timestamp at);
  // An operator action on an incident: done to each of its open members, then the incident
  // follows them. Unknown or closed incidents change nothing.
  [[nodiscard]] std::vector<AlertEvent> act_on_incident(const core::AlertId& incident_id,
                                                        OperatorAction action, core::Timestamp at);
  // An operator action on an open alert about a GPU or host out of line (its id). Acknowledged:
  // it stays open and resolves when the unit is back in line. Rebaselined: it closes, and the
  // unit is not alerted again until it has been back in line (its level was accepted). Unknown
  // or closed alerts, and acknowledging an acknowledged one, change nothing.
  [[nodiscard]] std::vector<AlertEvent> act_on_unit(const core::AlertId& alert_id,
                                                    OperatorAction action, core::Timestamp at);
  // The open alerts about a GPU or host out of line, by "<environment> <unit id>".
  [[nodiscard]] const std::map<std::string, Alert>& unit_alerts() const { return unit_alerts_; }
  // Ends a cycle (a scheduled cycle, a posted batch, a gap in a replayed history): the controls
  // decide every held step against the verdicts of its onset's cycle; incident members fire on
  // their keys as members and their incident fires once (an incident that gains members later
  // comes back with all of them, not fired again); the rest fire as the keys' own alerts.
  // It also judges each GPU (and host) against its siblings over its environment's runs since
  // the last close (detectors/siblings.hpp): one alert fires for a GPU out of line, and resolves
  // when a later cycle shows it back in line. A host whose steps the fleet's runs show it took
  // alone (detectors/fleet.hpp) gets one incident about the host instead (its placement set).
  [[nodiscard]] std::vector<AlertEvent> close_cycle();
  [[nodiscard]] bool holds_triggers() const { return !held_.empty(); }

  // The newest run of a key as the status shows it (not the whole observation: the watch keeps
  // this for every key, and copying the run's software map on each run cost a third of a replay).
  struct LastRun {
    std::string external_id;
    core::Timestamp observed_at{};
    core::RunStatus status = core::RunStatus::Passed;
    std::chrono::nanoseconds median{0};
  };
  struct KeyView {
    const KeyMonitor* monitor = nullptr;
    std::optional<LastRun> last_run;
    Verdict last_verdict;  // of the newest judgeable run
  };
  [[nodiscard]] const KeyView* find(const std::string& key_identity) const;
  // Every key, in identity order.
  [[nodiscard]] std::vector<const KeyView*> keys() const;
  // A recent incident by id (the few cycles' worth the watch remembers), or null.
  [[nodiscard]] const Alert* incident(const core::AlertId& id) const;

 private:
  struct KeyState {
    KeyView view;
    std::unique_ptr<KeyMonitor> monitor;
  };
  struct Held {
    std::string key_identity;
    Trigger trigger;
  };

  // The incident `id` with these members added (or replaced by id), as an event: fired when the
  // incident is new.
  [[nodiscard]] AlertEvent join_incident(const core::AlertId& id, std::vector<Alert> members,
                                         const std::string& cause);
  // The fleet rule over the held steps (close_cycle() only): steps a host took alone, on most of
  // the keys it judged in the cycle, join one incident about the host.
  void decide_by_fleet(std::span<const HeldStep> steps, std::vector<StepDecision>& decisions);
  // Members' state changes in `events` (resolved, acknowledged, superseded) move their incident:
  // its updated record is appended after them.
  MonitorStep observe(const KeyLabels& key, const Observation& run, ConfirmPolicy confirm,
                      bool for_controls);
  void follow_members(std::vector<AlertEvent>& events);
  // The siblings rule over each environment's runs since the last close: alerts fired and
  // resolved.
  [[nodiscard]] std::vector<AlertEvent> judge_units();
  // The held steps decided by the controls (close_cycle() without the siblings rule: a key's
  // next run closes its held step while the cycle's other runs are still to come), and by the
  // fleet's runs when `with_fleet` (close_cycle(): the fleet's runs are read for that close).
  [[nodiscard]] std::vector<AlertEvent> close_steps(bool with_fleet = false);
  [[nodiscard]] Alert* find_incident(const core::AlertId& id);

  DetectorParameters parameters_;
  Controls controls_;
  std::unordered_map<std::string, KeyState> keys_;  // by identity; keys() sorts
  std::vector<Held> held_;  // triggers of the open cycle, in the order they came
  // Recent incidents by id, oldest first: open ones are kept until they close, closed ones a
  // few cycles' worth, so a member confirmed late joins the incident of its onset.
  std::deque<Alert> incidents_;
  // Alerts about a GPU or host out of line, by "<environment> <unit id>": open ones, and
  // rebaselined ones while their unit stays out of line (so that it is not alerted again).
  std::map<std::string, Alert> unit_alerts_;
  FleetRuns fleet_;  // the other hosts' runs of the keys (seeds, and those read for steps)
  // Incidents about a host out of line with its fleet, by id: the host and what is said of it.
  struct HostIncident {
    core::Placement placement;
    std::string text;
    double against_fleet = 0;
  };
  std::map<core::AlertId, HostIncident> host_incidents_;
};

// Whether a step's breach (its onset) and the run that confirmed it ran on different GPUs or
// hosts (their labels). Such a step is not closed by the key's next run: it waits for the
// cycle's close, and a later run of the key in the cycle back in the old band (RunRole::Returned)
// drops it, as two slow siblings, not a step of the code (docs/DETECTION.md).
[[nodiscard]] bool confirmed_by_a_sibling(const Trigger& trigger);

// The incident's lifecycle state from its members': firing while one fires, acknowledged while
// the open ones are, then resolved when a member resolved, else rebaselined.
[[nodiscard]] core::AlertState incident_state(const std::vector<Alert>& members);

// One line a person reads about an incident: what moved (how many keys, which way, which
// benchmarks and providers, the median change), whether references moved with the subjects,
// and what changed at that run where the runs say so.
[[nodiscard]] std::string describe_incident(const Alert& incident, const Controls& controls);

// The attribution changes shared by the members (each field's most common change, in at least
// a quarter of them), most common first, and the count of members that show each.
struct SharedChange {
  core::AttributionChange change;
  std::size_t members = 0;
};
[[nodiscard]] std::vector<SharedChange> shared_changes(const std::vector<Alert>& members);

}  // namespace kernelwatch::detectors
