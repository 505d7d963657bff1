#include "daemon/backtest_command.hpp"

#include <map>
#include <ostream>

#include "daemon/history.hpp"

namespace kernelwatch::daemon {

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
  // provider and with the other keys of its environment. The runs stream in time order, so
  // memory is what the detectors keep per key, not the history.
  const storage::RunStore runs(*store);
  const auto labels = key_labels_by_id(runs);
  if (!labels) {
    err << "kernelwatch backtest: " << labels.error().message << '\n';
    return 1;
  }
  detectors::BacktestOptions backtest_options;
  backtest_options.parameters.confirm = *confirm;
  backtest_options.filter = options.filter;
  detectors::Backtest replay(backtest_options);
  std::size_t run_count = 0;
  auto streamed = runs.for_each_in_time_order([&](const storage::RunSummary& run) -> core::Status {
    replay.observe(labels->at(run.key_id), observation_of(run));
    ++run_count;
    return {};
  });
  if (!streamed) {
    err << "kernelwatch backtest: " << streamed.error().message << '\n';
    return 1;
  }
  for (const auto& why : runs.unreadable()) {
    err << "kernelwatch backtest: skipped an unreadable stored run: " << why << '\n';
  }
  const auto alerts = replay.finish();
  if (options.format == OutputFormat::Json) {
    out << detectors::to_json(alerts).dump(2) << '\n';
  } else {
    out << detectors::format_alert_table(alerts);
    out << "replayed " << labels->size() << " keys and " << run_count << " runs with --confirm "
        << options.confirm << '\n';
  }
  return 0;
}

}  // namespace kernelwatch::daemon
