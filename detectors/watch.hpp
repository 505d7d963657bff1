// The detectors over every key: one KeyMonitor per key, the cycles the controls compare, and the
// cycle's close: a key's step is held until then, and the controls decide whether it is the
// key's own alert (fired) or part of an environment incident (its reference or subject moved
// with it, or a host shift moved the references of its duration): one incident record per
// environment, cycle and direction, with its member keys. Nothing is fired before that.
// What the daemon keeps and what the backtest replays. Pure; standard library, core, detectors/.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/alert_state.hpp"
#include "detectors/controls.hpp"
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
  // An operator action on an open alert of the key with this identity (KeyLabels::identity()).
  [[nodiscard]] std::vector<AlertEvent> act(const std::string& key_identity,
                                            std::string_view alert_id, OperatorAction action,
                                            core::Timestamp at);
  // Ends a cycle (a scheduled cycle, a posted batch, a gap in a replayed history): the controls
  // judge every held step against the verdicts of its onset's cycle; environment shifts become
  // incidents (kind Environment, fired once; an incident that gains members later comes back
  // with all of them), the rest fire as the key's own alerts.
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

 private:
  struct KeyState {
    KeyView view;
    std::unique_ptr<KeyMonitor> monitor;
  };
  struct Held {
    std::string key_identity;
    Trigger trigger;
  };

  [[nodiscard]] AlertEvent incident_event(std::vector<Alert> members);

  DetectorParameters parameters_;
  Controls controls_;
  std::map<std::string, KeyState> keys_;
  std::vector<Held> held_;  // triggers of the open cycle, in the order they came
  // Recent incidents by id (a few cycles' worth), so one that gains members is sent whole.
  std::deque<Alert> incidents_;
};

}  // namespace kernelwatch::detectors
