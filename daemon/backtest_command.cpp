#include "daemon/backtest_command.hpp"

#include <algorithm>
#include <ostream>

#include "config/config.hpp"
#include "replay/replay.hpp"

namespace kernelwatch::daemon {

core::Result<detectors::DetectorParameters> detector_parameters(
    const std::filesystem::path& config) {
  if (config.empty()) return detectors::DetectorParameters{};
  const auto loaded = KW_TRY(config::load_config(config));
  return loaded.detector.parameters;
}

int run_backtest(const BacktestCommandOptions& options, std::ostream& out, std::ostream& err) {
  replay::Options replay_options;
  if (options.confirm != "judged") {
    auto confirm = detectors::parse_confirm_policy(options.confirm);
    if (!confirm) {
      err << "kernelwatch backtest: --confirm: " << confirm.error().message << '\n';
      return 2;
    }
    replay_options.confirm = *confirm;
  }
  auto parameters = detector_parameters(options.config);
  if (!parameters) {
    err << "kernelwatch backtest: --config: " << parameters.error().message << '\n';
    return 1;
  }
  replay_options.parameters = std::move(*parameters);
  auto store = storage::Connection::open(options.db, storage::OpenMode::ReadOnly);
  if (!store) {
    err << "kernelwatch backtest: " << store.error().message << '\n';
    return 1;
  }
  // Every key is replayed, filtered or not: the controls compare a key with its reference
  // provider and with the other keys of its environment. The runs stream in time order, so
  // memory is what the detectors keep per key, not the history.
  auto replayed = replay::replay(*store, replay_options);
  if (!replayed) {
    err << "kernelwatch backtest: " << replayed.error().message << '\n';
    return 1;
  }
  for (const auto& why : storage::RunStore(*store).unreadable()) {
    err << "kernelwatch backtest: skipped an unreadable stored run: " << why << '\n';
  }
  std::vector<core::Alert> alerts;
  for (auto& alert : replayed->alerts) {
    // An incident is selected when one of its member keys is, a GPU or host alert when one of
    // the keys it was out of line on is: those keys first in what is printed of it.
    if (!options.filter.selects(alert)) continue;
    std::stable_partition(alert.keys.begin(), alert.keys.end(),
                          [&](const core::KeyLabels& key) { return options.filter.matches(key); });
    alerts.push_back(std::move(alert));
  }
  std::stable_sort(alerts.begin(), alerts.end(), [](const core::Alert& a, const core::Alert& b) {
    if (a.fired.observed_at != b.fired.observed_at)
      return a.fired.observed_at < b.fired.observed_at;
    return a.key.display() < b.key.display();
  });
  if (options.format == OutputFormat::Json) {
    out << detectors::to_json(alerts).dump(2) << '\n';
  } else {
    out << detectors::format_alert_table(alerts);
    out << "replayed " << replayed->labels.size() << " keys and " << replayed->runs
        << " runs with --confirm " << options.confirm << '\n';
  }
  return 0;
}

}  // namespace kernelwatch::daemon
