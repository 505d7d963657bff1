#include "daemon/bench_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <iterator>
#include <mutex>
#include <ostream>
#include <thread>

#include "config/duration.hpp"
#include "daemon/clock.hpp"
#include "daemon/format.hpp"
#include "kernels/catalogue.hpp"
#include "kernels/harness/bench.hpp"
#include "runners/producer.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

// Progress on stderr, so a long run is never silent: a line when a case starts each phase, and
// every 2 s how long the phase has run and, once one case finished, about how long the cases
// left will take ("bench: [2/3] tvd_forward_kernelwatch_fused_cpu: timing for 4 s; about 9 s
// left").
class Progress {
 public:
  Progress(std::ostream& err, std::size_t cases)
      : err_(err), cases_(cases), thread_([this] { loop(); }) {}
  ~Progress() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void begin(std::string name) {
    std::lock_guard lock(mutex_);
    name_ = std::move(name);
    case_started_ = std::chrono::steady_clock::now();
    ++index_;
  }
  // A new phase of the current case (kernels::BenchContext::on_phase).
  void phase(std::string_view phase) {
    std::lock_guard lock(mutex_);
    phase_ = phase;
    phase_started_ = std::chrono::steady_clock::now();
    err_ << "bench: " << prefix() << ": " << phase_ << '\n' << std::flush;
  }
  void end() {
    std::lock_guard lock(mutex_);
    finished_ += std::chrono::steady_clock::now() - case_started_;
    name_.clear();
  }

 private:
  std::string prefix() const {
    return "[" + std::to_string(index_) + "/" + std::to_string(cases_) + "] " + name_;
  }
  // The cases left (this one included) at the mean duration of those finished.
  std::string time_left(std::chrono::steady_clock::time_point now) const {
    const std::size_t done = index_ - 1;
    if (done == 0) return "";
    const double mean =
        std::chrono::duration<double>(finished_).count() / static_cast<double>(done);
    const double spent = std::chrono::duration<double>(now - case_started_).count();
    const double left = std::max(0.0, mean * static_cast<double>(cases_ - done) - spent);
    return "; about " + std::to_string(static_cast<long long>(std::ceil(left))) + " s left";
  }
  void loop() {
    std::unique_lock lock(mutex_);
    while (!done_) {
      wake_.wait_for(lock, std::chrono::seconds(2));
      if (done_ || name_.empty() || phase_.empty()) continue;
      const auto now = std::chrono::steady_clock::now();
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(now - phase_started_).count();
      if (seconds >= 2) {
        err_ << "bench: " << prefix() << ": " << phase_ << " for " << seconds << " s"
             << time_left(now) << '\n'
             << std::flush;
      }
    }
  }

  std::ostream& err_;
  const std::size_t cases_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::size_t index_ = 0;
  std::string name_;
  std::string phase_;
  std::chrono::steady_clock::time_point case_started_;
  std::chrono::steady_clock::time_point phase_started_;
  std::chrono::steady_clock::duration finished_{0};
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

core::Result<std::vector<core::Provider>> providers_of(const std::string& name) {
  if (name == "all")
    return std::vector<core::Provider>(std::begin(core::kProviders), std::end(core::kProviders));
  return std::vector<core::Provider>{KW_TRY(core::parse_provider(name))};
}

// "auto": CUDA when there is a GPU, else the CPU; a named backend must be available.
core::Result<kernels::Backend> backend_of(const std::string& name) {
  if (name == "auto") {
    return kernels::backend_available(kernels::Backend::Cuda) ? kernels::Backend::Cuda
                                                              : kernels::Backend::Cpu;
  }
  const kernels::Backend backend = KW_TRY(kernels::parse_backend(name));
  KW_TRY(kernels::backend_available(backend));
  return backend;
}

// The shapes: --workload labels of the kernel, else its two axes from the flags named by its
// descriptor (--rows/--hidden, --tokens/--vocab), else its bench shape on a GPU or a CPU.
core::Result<std::vector<kernels::CaseSpec>> specs_of(const BenchOptions& options,
                                                      kernels::KernelRef kernel,
                                                      kernels::Backend backend) {
  const kernels::BenchShape& shape = kernel->bench_shape;
  const std::pair<std::string_view, std::optional<std::int64_t>> flags[] = {
      {"rows", options.rows},
      {"hidden", options.hidden},
      {"tokens", options.tokens},
      {"vocab", options.vocab}};
  for (const auto& [flag, value] : flags) {
    if (!value || flag == shape.rows_flag || flag == shape.cols_flag) continue;
    std::string pair;
    std::string owners;
    for (const kernels::KernelDescriptor* other : kernels::catalogue()) {
      const kernels::BenchShape& s = other->bench_shape;
      if (flag != s.rows_flag && flag != s.cols_flag) continue;
      pair = "--" + std::string(s.rows_flag) + " and --" + std::string(s.cols_flag);
      owners += (owners.empty() ? "" : ", ") + std::string(other->name);
    }
    return core::fail(core::ErrorCode::InvalidArgument, pair + " apply to --kernel " + owners +
                                                            ", not " + std::string(kernel.name()));
  }
  std::vector<kernels::CaseSpec> specs;
  if (!options.workloads.empty()) {
    if (options.rows || options.hidden || options.tokens || options.vocab) {
      return core::fail(core::ErrorCode::InvalidArgument,
                        "--workload gives the whole shape: leave out --" +
                            std::string(shape.rows_flag) + " and --" +
                            std::string(shape.cols_flag));
    }
    for (const auto& label : options.workloads) {
      const core::Workload workload = KW_TRY(core::Workload::from_label(label));
      specs.push_back(KW_TRY(kernels::CaseSpec::from_workload(kernel, workload)));
    }
    return specs;
  }
  const auto value = [&](std::string_view flag) -> std::optional<std::int64_t> {
    for (const auto& [name, given] : flags) {
      if (name == flag) return given;
    }
    return std::nullopt;
  };
  const bool gpu = backend == kernels::Backend::Cuda;
  kernels::CaseSpec spec;
  spec.dtype = KW_TRY(core::parse_dtype(options.dtype));
  spec.rows = value(shape.rows_flag).value_or(gpu ? shape.gpu_rows : shape.cpu_rows);
  spec.cols = value(shape.cols_flag).value_or(gpu ? shape.gpu_cols : shape.cpu_cols);
  specs.push_back(spec);
  return specs;
}

using Clock = std::function<core::Timestamp()>;

// One request per provider and shape (the daemon's own expansion of an entry), from the
// command line's options.
core::Result<std::vector<kernels::BenchRequest>> plan(const BenchOptions& options) {
  const kernels::KernelRef kernel = KW_TRY(kernels::find_kernel(options.kernel));
  const core::Pass pass = KW_TRY(core::parse_pass(options.pass));
  const auto providers = KW_TRY(providers_of(options.provider));
  const kernels::Backend backend = KW_TRY(backend_of(options.backend));
  const auto specs = KW_TRY(specs_of(options, kernel, backend));
  if (options.warmup_ms < 0 || options.rep_ms <= 0) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      "--warmup-ms must be >= 0 and --rep-ms > 0");
  }
  kernels::TimingPolicy policy;
  policy.warmup = std::chrono::milliseconds(options.warmup_ms);
  policy.repetitions = std::chrono::milliseconds(options.rep_ms);
  return runners::harness_cases({kernel, pass, providers, specs, backend, policy, options.seed});
}

// Each request through the daemon's own source of harness runs (runners::HarnessProducer).
core::Result<std::vector<core::Run>> run_all(const std::vector<kernels::BenchRequest>& requests,
                                             const Clock& now, std::ostream& err) {
  Progress progress(err, requests.size());
  std::vector<core::Run> runs;
  for (const auto& request : requests) {
    runners::HarnessProducer producer(request);
    producer.on_phase([&progress](std::string_view phase) { progress.phase(phase); });
    progress.begin(request.id.name());
    auto produced = producer.run(now);
    progress.end();
    auto done = KW_TRY(std::move(produced));
    // A run the harness made without a key (never expected) is an error, as a bad shape is.
    if (!done.error.empty()) return core::fail(core::ErrorCode::Internal, done.error);
    for (auto& run : done.runs) runs.push_back(std::move(run));
  }
  return runs;
}

// --runner liger-bench: the cases of one kernel and pass (the daemon's own expansion of a
// liger-bench entry), run through liger_bench.py in one child.
struct LigerPlan {
  runners::LigerBenchOptions options;
  std::vector<runners::LigerCase> cases;
};

core::Result<LigerPlan> plan_liger(const BenchOptions& options) {
  if (options.runner != runners::kLigerBenchRunner) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      "unknown runner \"" + options.runner +
                          "\" (known: " + std::string(runners::kLigerBenchRunner) + ")");
  }
  const kernels::KernelRef kernel = KW_TRY(runners::parse_liger_bench_kernel(options.kernel));
  const auto pass = KW_TRY(core::parse_pass(options.pass));
  runners::LigerBenchEntry entry{kernel, pass, {}, {}};
  for (const auto provider : runners::kLigerProviders) {
    if (!runners::supports(kernel, provider)) continue;
    if (options.provider == "all" || options.provider == runners::to_string(provider))
      entry.providers.push_back(provider);
  }
  if (entry.providers.empty()) {
    return core::fail(core::ErrorCode::InvalidArgument,
                      "provider \"" + options.provider + "\" is not one liger-bench runs for " +
                          options.kernel + " (" + runners::providers_of(kernel) + " or all)");
  }
  std::vector<std::string> labels = options.workloads;
  if (labels.empty()) {
    // The founding workload: the kernel's own bench shape on a GPU.
    kernels::CaseSpec founding;
    founding.rows = kernel->bench_shape.gpu_rows;
    founding.cols = kernel->bench_shape.gpu_cols;
    labels = {kernels::workload_of(kernel, founding).label()};
  }
  for (const auto& label : labels) {
    entry.workloads.push_back(KW_TRY(core::Workload::from_label(label)));
  }
  LigerPlan plan;
  plan.cases = runners::liger_cases(entry);
  for (const auto& c : plan.cases) KW_TRY(runners::validate(c));
  plan.options.python = options.python;
  plan.options.script = options.script;
  plan.options.timeout = KW_TRY(config::parse_duration(options.timeout));
  plan.options.sampler = runners::nvml_sampler();
  plan.options.placement = std::nullopt;  // the runs as the runner labels them
  return plan;
}

// Every case through the daemon's own source of liger-bench runs (runners::LigerBenchProducer),
// in one child process.
core::Result<std::vector<core::Run>> run_liger(const LigerPlan& plan, const Clock& now,
                                               std::ostream& err) {
  err << "bench: running " << plan.cases.size() << " case(s) through "
      << plan.options.python.string() << " liger_bench.py\n"
      << std::flush;
  runners::LigerBenchProducer producer(plan.options, plan.cases);
  auto done = KW_TRY(producer.run(now));
  // A result without a key is not a run: said, and left out of the table and the store.
  if (!done.error.empty()) err << "bench: " << done.error << '\n';
  return std::move(done.runs);
}

// The options' cases, every option checked, ready to run: the harness's, or liger-bench's.
using Runs = std::function<core::Result<std::vector<core::Run>>()>;

// The clock every run is observed by: the wall clock, or --observed-at's one instant.
core::Result<Clock> clock_of(const BenchOptions& options) {
  if (options.observed_at.empty()) return Clock(wall_now);
  auto at = core::parse_timestamp(options.observed_at);
  if (!at) {
    return core::fail(core::ErrorCode::InvalidArgument, "--observed-at: " + at.error().message);
  }
  return Clock([at = *at] { return at; });
}

core::Result<Runs> plan_runs(const BenchOptions& options, std::ostream& err) {
  Clock now = KW_TRY(clock_of(options));
  if (!options.runner.empty()) {
    LigerPlan liger = KW_TRY(plan_liger(options));
    return Runs([liger = std::move(liger), now, &err] { return run_liger(liger, now, err); });
  }
  std::vector<kernels::BenchRequest> requests = KW_TRY(plan(options));
  return Runs([requests = std::move(requests), now, &err] { return run_all(requests, now, err); });
}

core::Status store_all(storage::Connection& store, const std::vector<core::Run>& runs) {
  auto tx = KW_TRY(store.begin());
  for (const auto& run : runs) KW_TRY(storage::RunStore(store).insert_run(tx, run, ""));
  return tx.commit();
}

void print_outcomes(const std::vector<core::Run>& runs, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& o : runs) {
    const auto& run = o.record().run;
    const auto& key = o.key();
    const auto& figures = o.figures();
    const std::string name = run.source_native.benchmark + " " + key.provider.label;
    // The times are the record's, whichever source ran it; the repetitions the harness's.
    if (!run.median) {
      rows.push_back({name, key.workload.label, std::string(core::to_string(run.status)), "-", "-",
                      "-", "-", "-", "-"});
      continue;
    }
    const auto quantile = [&](std::string_view statistic) {
      return format_duration(run.latency(statistic).value_or(*run.median));
    };
    rows.push_back(
        {name, key.workload.label, std::string(core::to_string(run.status)),
         format_duration(*run.median), quantile("p20"), quantile("p80"),
         figures.repetitions > 0 ? std::to_string(figures.repetitions) : "-",
         figures.achieved_gbps > 0 ? gbps(figures.achieved_gbps) : "-",
         figures.peak_gbps > 0 ? percent(figures.achieved_gbps / figures.peak_gbps) : "-"});
  }
  print_table(
      out, {"CASE", "WORKLOAD", "STATUS", "MEDIAN", "P20", "P80", "REPS", "GB/S", "OF PEAK"}, rows);
  for (const auto& o : runs) {
    const std::string& reason = o.record().run.status_reason;
    if (!reason.empty()) out << o.record().run.source_native.external_id << ": " << reason << '\n';
  }
}

}  // namespace

int run_bench(const BenchOptions& options, std::ostream& out, std::ostream& err) {
  const auto fail = [&](const std::string& message) {
    err << "kernelwatch bench: " << message << '\n';
    return 1;
  };
  const auto runs = plan_runs(options, err);
  if (!runs) return fail(runs.error().message);
  // Opened before the cases run: a --db that cannot be written fails at once.
  std::optional<storage::Connection> store;
  if (!options.db.empty()) {
    auto opened = storage::Connection::open(options.db, storage::OpenMode::Create);
    if (!opened) return fail(opened.error().message);
    store.emplace(std::move(*opened));
  }
  const auto outcomes = (*runs)();
  if (!outcomes) return fail(outcomes.error().message);
  if (store) {
    if (auto stored = store_all(*store, *outcomes); !stored) return fail(stored.error().message);
  }
  if (options.format == OutputFormat::Json) {
    json array = json::array();
    for (const auto& outcome : *outcomes) array.push_back(core::to_json(outcome.record()));
    out << array.dump(2) << '\n';
    return 0;
  }
  print_outcomes(*outcomes, out);
  if (store) out << "stored " << outcomes->size() << " runs in " << options.db.string() << '\n';
  return 0;
}

}  // namespace kernelwatch::daemon
