// The backtest: replays every key's stored history in observedAt order through the detectors
// (a Watch, as the daemon keeps them), closing a cycle at each gap longer than cycle_gap, and
// returns every alert raised; plus the JSON and table forms `kernelwatch backtest` prints.
// Pure; core, nlohmann/json, detectors/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "detectors/alert_state.hpp"
#include "detectors/controls.hpp"
#include "detectors/observation.hpp"
#include "detectors/parameters.hpp"
#include "detectors/watch.hpp"

namespace kernelwatch::detectors {

// Empty strings match every key. The filter selects which alerts are returned; every key is
// still replayed, because the controls need the reference providers and the other keys.
struct KeyFilter {
  std::string benchmark;
  std::string provider;
  std::string workload;
  std::string environment;

  [[nodiscard]] bool matches(const KeyLabels& key) const;
  // Whether the alert is selected: its key matches, or for an incident one of its members' keys,
  // or for a GPU or host alert (which has no key of its own) one of the keys it was out of line
  // on (Alert::keys).
  [[nodiscard]] bool selects(const Alert& alert) const;
};

struct BacktestOptions {
  DetectorParameters parameters;  // parameters.confirm is `--confirm`
  KeyFilter filter;
};

// "none" | "next" (the `--confirm` values), and back.
[[nodiscard]] std::string_view to_string(ConfirmPolicy policy) noexcept;
[[nodiscard]] core::Result<ConfirmPolicy> parse_confirm_policy(std::string_view text);

// The backtest as a stream: every key's runs in observedAt order in (the caller reads them in
// that order), the alerts out at the end. Memory is what the Watch keeps per key (bounded) and
// the alerts, whatever the history's length.
class Backtest {
 public:
  explicit Backtest(BacktestOptions options);
  // The next run; runs must come in observedAt order across keys.
  void observe(const KeyLabels& key, const Observation& run);
  // Every alert the detectors would have raised, ordered by the firing run's observedAt, then
  // key. Each alert's `state` is where its lifecycle ended (no operator acknowledges).
  [[nodiscard]] std::vector<Alert> finish();

 private:
  void apply(std::vector<AlertEvent> events);

  BacktestOptions options_;
  Watch watch_;
  std::vector<Alert> alerts_;
  std::map<core::AlertId, std::size_t> index_of_;
  std::optional<core::Timestamp> previous_;
};

// The same over histories in memory (runs of a key in any order): merged in observedAt order.
[[nodiscard]] std::vector<Alert> backtest(const std::vector<KeyHistory>& histories,
                                          const BacktestOptions& options);

// An array of the alerts' one JSON form (core::to_json, core/alert.hpp); a GPU or host alert
// also with "unit" ("gpu" | "host") and "keys" (the keys it was out of line on, each
// {"benchmark","provider","workload"}; its environment is the alert's).
[[nodiscard]] nlohmann::json to_json(const std::vector<Alert>& alerts);

// One readable line per alert and a header: the table `kernelwatch backtest` prints without
// --json. Environment alerts of one incident are printed under one incident line; a GPU or host
// alert's line ends with the first keys it was out of line on.
[[nodiscard]] std::string format_alert_line(const Alert& alert);
[[nodiscard]] std::string format_alert_table(const std::vector<Alert>& alerts);

}  // namespace kernelwatch::detectors
