#include "daemon/bench_command.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <ostream>
#include <thread>

#include "config/duration.hpp"
#include "daemon/clock.hpp"
#include "daemon/format.hpp"
#include "kernels/harness/bench.hpp"
#include "runners/producer.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

// Prints "still running" on stderr every 2 s while a case runs, so a long case is never silent.
class Progress {
 public:
  explicit Progress(std::ostream& err) : err_(err), thread_([this] { loop(); }) {}
  ~Progress() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void begin(std::string name) {
    std::lock_guard lock(mutex_);
    name_ = std::move(name);
    started_ = std::chrono::steady_clock::now();
    wake_.notify_all();
  }
  void end() {
    std::lock_guard lock(mutex_);
    name_.clear();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (!done_) {
      wake_.wait_for(lock, std::chrono::seconds(2));
      if (done_ || name_.empty()) continue;
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - started_);
      if (seconds.count() >= 2)
        err_ << "bench: " << name_ << " running for " << seconds.count() << " s\n" << std::flush;
    }
  }
  std::ostream& err_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::string name_;
  std::chrono::steady_clock::time_point started_;
  std::thread thread_;
};

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

std::string gbps(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

// Stores (--db) and prints the runs of either path: the table, or the records as JSON.
int print_outcomes(const BenchOptions& options, const std::vector<kernels::BenchOutcome>& outcomes,
                   std::ostream& out, std::ostream& err) {
  const auto fail = [&](const std::string& message) {
    err << "kernelwatch bench: " << message << '\n';
    return 1;
  };
  std::optional<storage::Connection> store;
  if (!options.db.empty()) {
    auto opened = storage::Connection::open(options.db, storage::OpenMode::Create);
    if (!opened) return fail(opened.error().message);
    store.emplace(std::move(*opened));
  }

  if (store) {
    auto tx = store->begin();
    if (!tx) return fail(tx.error().message);
    for (const auto& outcome : outcomes) {
      if (auto ok = storage::RunStore(*store).insert_run(*tx, outcome.record, ""); !ok)
        return fail(ok.error().message);
    }
    if (auto ok = tx->commit(); !ok) return fail(ok.error().message);
  }

  if (options.format == OutputFormat::Json) {
    json array = json::array();
    for (const auto& outcome : outcomes) array.push_back(core::to_json(outcome.record));
    out << array.dump(2) << '\n';
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& o : outcomes) {
    const auto& run = o.record.run;
    const auto key = core::key_of(o.record);
    const std::string name = run.source_native.benchmark + " " + (key ? key->provider.label : "?");
    if (!o.summary) {
      rows.push_back({name, key ? key->workload.label : "?",
                      std::string(core::to_string(run.status)), "-", "-", "-", "-", "-", "-"});
      continue;
    }
    rows.push_back({name, key ? key->workload.label : "?", std::string(core::to_string(run.status)),
                    format_duration(o.summary->median), format_duration(o.summary->p20),
                    format_duration(o.summary->p80),
                    o.summary->count > 0 ? std::to_string(o.summary->count) : "-",
                    o.achieved_gbps > 0 ? gbps(o.achieved_gbps) : "-",
                    o.peak_gbps > 0 ? percent(o.achieved_gbps / o.peak_gbps) : "-"});
  }
  print_table(
      out, {"CASE", "WORKLOAD", "STATUS", "MEDIAN", "P20", "P80", "REPS", "GB/S", "OF PEAK"}, rows);
  for (const auto& o : outcomes) {
    const auto& spec = o.record.run.document.at("spec");
    const std::string reason = spec.value("statusReason", std::string());
    if (!reason.empty()) out << o.record.run.source_native.external_id << ": " << reason << '\n';
  }
  if (store) out << "stored " << outcomes.size() << " runs in " << options.db.string() << '\n';
  return 0;
}

// --runner liger-bench: the cases of one kernel and pass through liger_bench.py, in one child.
core::Result<std::vector<kernels::BenchOutcome>> run_liger_cases(const BenchOptions& options,
                                                                 std::ostream& err) {
  if (options.runner != runners::kLigerBenchRunner) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      "unknown runner \"" + options.runner +
                          "\" (known: " + std::string(runners::kLigerBenchRunner) + ")");
  }
  const auto kernel = KW_TRY(core::parse_kernel(options.kernel));
  const auto pass = KW_TRY(core::parse_pass(options.pass));
  std::vector<runners::LigerProvider> providers;
  for (const auto provider : runners::kLigerProviders) {
    if (!runners::supports(kernel, provider)) continue;
    if (options.provider == "all" || options.provider == runners::to_string(provider))
      providers.push_back(provider);
  }
  if (providers.empty()) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      "provider \"" + options.provider + "\" is not one liger-bench runs for " +
                          options.kernel + " (" + runners::providers_of(kernel) + " or all)");
  }
  std::vector<std::string> labels = options.workloads;
  if (labels.empty()) {
    labels = {kernel == core::Kernel::Tvd ? "tokens16384-vocab65536-fp32"
                                          : "hidden16384-rows4096-fp32"};
  }
  std::vector<runners::LigerCase> cases;
  for (const auto provider : providers) {
    for (const auto& label : labels) {
      const auto workload = KW_TRY(core::Workload::from_label(label));
      runners::LigerCase c{kernel, pass, provider, workload};
      KW_TRY(runners::validate(c));
      cases.push_back(std::move(c));
    }
  }
  runners::LigerBenchOptions liger;
  liger.python = options.python;
  liger.script = options.script;
  liger.timeout = KW_TRY(config::parse_duration(options.timeout));
  liger.sampler = runners::nvml_sampler();
  err << "bench: running " << cases.size() << " case(s) through " << liger.python.string()
      << " liger_bench.py\n"
      << std::flush;
  return runners::run_liger_bench(liger, cases, wall_now);
}

}  // namespace

int run_bench(const BenchOptions& options, std::ostream& out, std::ostream& err) {
  const auto fail = [&](const std::string& message) {
    err << "kernelwatch bench: " << message << '\n';
    return 1;
  };
  std::vector<kernels::BenchOutcome> outcomes;
  if (!options.runner.empty()) {
    auto ran = run_liger_cases(options, err);
    if (!ran) return fail(ran.error().message);
    outcomes = std::move(*ran);
    return print_outcomes(options, outcomes, out, err);
  }
  auto kernel = core::parse_kernel(options.kernel);
  if (!kernel) return fail(kernel.error().message);
  auto pass = core::parse_pass(options.pass);
  if (!pass) return fail(pass.error().message);
  std::vector<core::Provider> providers;
  if (options.provider == "all") {
    providers.assign(std::begin(core::kProviders), std::end(core::kProviders));
  } else {
    auto provider = core::parse_provider(options.provider);
    if (!provider) return fail(provider.error().message);
    providers = {*provider};
  }
  kernels::Backend backend = kernels::Backend::Cpu;
  if (options.backend == "auto") {
    backend = kernels::backend_available(kernels::Backend::Cuda) ? kernels::Backend::Cuda
                                                                 : kernels::Backend::Cpu;
  } else {
    auto parsed = kernels::parse_backend(options.backend);
    if (!parsed) return fail(parsed.error().message);
    backend = *parsed;
    if (auto ok = kernels::backend_available(backend); !ok) return fail(ok.error().message);
  }
  auto dtype = core::parse_dtype(options.dtype);
  if (!dtype) return fail(dtype.error().message);

  const bool layer_norm = *kernel == core::Kernel::LayerNorm;
  if (layer_norm && (options.tokens || options.vocab))
    return fail("--tokens and --vocab apply to --kernel tvd");
  if (!layer_norm && (options.rows || options.hidden))
    return fail("--rows and --hidden apply to --kernel layer_norm");
  // Defaults: the founding workloads on a GPU; on a CPU, shapes that finish in seconds on 2 cores.
  const bool gpu = backend == kernels::Backend::Cuda;
  kernels::CaseSpec spec;
  spec.dtype = *dtype;
  if (layer_norm) {
    spec.rows = options.rows.value_or(gpu ? 4096 : 2048);
    spec.cols = options.hidden.value_or(gpu ? 16384 : 2048);
  } else {
    spec.rows = options.tokens.value_or(gpu ? 16384 : 1024);
    spec.cols = options.vocab.value_or(gpu ? 65536 : 4096);
  }
  if (options.warmup_ms < 0 || options.rep_ms <= 0)
    return fail("--warmup-ms must be >= 0 and --rep-ms > 0");

  kernels::BenchContext context;
  context.now = wall_now;
  {
    Progress progress(err);
    for (const auto provider : providers) {
      kernels::BenchRequest request;
      request.id = {*kernel, *pass, provider, backend};
      request.spec = spec;
      request.policy.warmup = std::chrono::milliseconds(options.warmup_ms);
      request.policy.repetitions = std::chrono::milliseconds(options.rep_ms);
      request.seed = options.seed;
      progress.begin(request.id.name());
      auto outcome = kernels::run_benchmark(request, context);
      progress.end();
      if (!outcome) return fail(outcome.error().message);
      outcomes.push_back(std::move(*outcome));
    }
  }

  return print_outcomes(options, outcomes, out, err);
}

}  // namespace kernelwatch::daemon
