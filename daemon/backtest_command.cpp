#include "daemon/backtest_command.hpp"

#include <map>
#include <ostream>

namespace kernelwatch::daemon {

core::Result<std::vector<detectors::KeyHistory>> load_key_histories(const storage::RunStore& runs) {
  const auto stored = KW_TRY(runs.runs({}));
  std::map<std::int64_t, detectors::KeyHistory> by_key;
  for (const auto& run : stored) {
    auto [it, inserted] = by_key.try_emplace(run.key_id);
    if (inserted) it->second.key = detectors::key_labels(run.key);
    it->second.runs.push_back(
        detectors::observation_from_record(run.record, run.implementation_version));
  }
  std::vector<detectors::KeyHistory> histories;
  histories.reserve(by_key.size());
  for (auto& [id, history] : by_key) histories.push_back(std::move(history));
  return histories;
}

int run_backtest(const BacktestCommandOptions& options, std::ostream& out, std::ostream& err) {
  auto confirm = detectors::parse_confirm_policy(options.confirm);
  if (!confirm) {
    err << "kernelwatch backtest: --confirm: " << confirm.error().message << '\n';
    return 2;
  }
  auto store = storage::Connection::open(options.db, storage::OpenMode::ReadOnly);
  if (!store) {
    err << "kernelwatch backtest: " << store.error().message << '\n';
    return 1;
  }
  // Every key is replayed, filtered or not: the controls compare a key with its reference
  // provider and with the other keys of its environment.
  auto histories = load_key_histories(storage::RunStore(*store));
  if (!histories) {
    err << "kernelwatch backtest: " << histories.error().message << '\n';
    return 1;
  }
  std::size_t run_count = 0;
  for (const auto& h : *histories) run_count += h.runs.size();

  detectors::BacktestOptions backtest_options;
  backtest_options.parameters.confirm = *confirm;
  backtest_options.filter = options.filter;
  const auto alerts = detectors::backtest(*histories, backtest_options);
  if (options.format == OutputFormat::Json) {
    out << detectors::to_json(alerts).dump(2) << '\n';
  } else {
    out << detectors::format_alert_table(alerts);
    out << "replayed " << histories->size() << " keys and " << run_count << " runs with --confirm "
        << options.confirm << '\n';
  }
  return 0;
}

}  // namespace kernelwatch::daemon
