#include "runners/liger_bench.hpp"

#include <unistd.h>

#include <cmath>
#include <map>
#include <mutex>
#include <system_error>

#include "core/digest.hpp"
#include "core/json_limits.hpp"
#include "core/record.hpp"
#include "kernels/catalogue.hpp"
#include "runners/child_process.hpp"
#include "runners/liger_csv.hpp"
#include "runners/run_status.hpp"

#ifndef KERNELWATCH_SOURCE_DIR
#define KERNELWATCH_SOURCE_DIR ""
#endif

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;
using nlohmann::json;

// Exit codes of liger_bench.py (runners/liger/README.md).
constexpr int kExitBadRequest = 2;
constexpr int kExitImport = 3;
constexpr int kExitNoCuda = 4;
// A result line is a few hundred bytes; anything longer is not one (and is never buffered).
constexpr std::size_t kMaxLineBytes = 64 * 1024;

// What one case's stdout line said.
struct CaseResult {
  bool passed = false;
  std::string reason;                // failed
  double p20 = 0, p50 = 0, p80 = 0;  // passed, ms
  std::string gpu_name;
  json device = json::object();
  json versions = json::object();
  kernels::GpuSample before, after;
};

// Checks one output line against the case it answers; the reason when it is not a valid result.
CaseResult parse_line(std::string_view line, const json& requested) {
  CaseResult r;
  // The same limits as every JSON input (depth, numbers beyond a double); never throws.
  auto parsed = core::parse_json_text(line);
  const json value = parsed ? std::move(*parsed) : json(json::value_t::discarded);
  const auto malformed = [&](const std::string& why) {
    CaseResult f;
    const std::string shown = core::utf8_prefix(line, 120);
    f.reason = "malformed runner output (" + why + "): " + shown;
    return f;
  };
  if (value.is_discarded() && (line.find("NaN") != std::string_view::npos ||
                               line.find("Infinity") != std::string_view::npos)) {
    // Python's json writes NaN and Infinity, which JSON does not have.
    CaseResult f;
    f.reason = "NaN, infinite or non-positive time: " + core::utf8_prefix(line, 200);
    return f;
  }
  if (value.is_discarded() || !value.is_object()) return malformed("not a JSON object");
  const auto status = value.find("status");
  if (status == value.end() || !status->is_string()) return malformed("no status");
  if (const auto echo = value.find("case"); echo == value.end() || *echo != requested) {
    return malformed("it does not echo its case");
  }
  if (*status == "failed") {
    const auto reason = value.find("reason");
    r.reason = reason != value.end() && reason->is_string() ? reason->get<std::string>()
                                                            : "the runner gave no reason";
    return r;
  }
  if (*status != "passed") return malformed("status is neither passed nor failed");
  const auto ms = value.find("ms");
  if (ms == value.end() || !ms->is_object()) return malformed("no ms object");
  double* const slots[] = {&r.p50, &r.p20, &r.p80};
  const char* const names[] = {"p50", "p20", "p80"};
  for (int i = 0; i < 3; ++i) {
    const auto it = ms->find(names[i]);
    if (it == ms->end() || !it->is_number()) return malformed(std::string("no ms.") + names[i]);
    *slots[i] = it->get<double>();
  }
  // In integer ns each time must be at least 1 and at most what a record carries (2^53 - 1 ns).
  const auto storable = [](double ms) {
    return std::isfinite(ms) && ms * 1e6 >= 0.5 && ms * 1e6 <= double(core::kMaxLatencyNs);
  };
  const auto times_failed = [&](const char* why, const char* expected) {
    CaseResult f;
    char buffer[200];
    std::snprintf(buffer, sizeof buffer, "%s: p50=%g p20=%g p80=%g ms%s", why, r.p50, r.p20, r.p80,
                  expected);
    f.reason = buffer;
    return f;
  };
  if (!(storable(r.p50) && storable(r.p20) && storable(r.p80))) {
    return times_failed("NaN, infinite or non-positive time (or over 2^53 - 1 ns)", "");
  }
  // A runner's quantiles out of order are not a measurement, whatever its median says.
  if (!(r.p20 <= r.p50 && r.p50 <= r.p80)) {
    return times_failed("quantiles out of order", " (p20 <= p50 <= p80 expected)");
  }
  const auto device = value.find("device");
  if (device == value.end() || !device->is_object() || !device->contains("name") ||
      !(*device)["name"].is_string() || (*device)["name"].get<std::string>().empty()) {
    return malformed("no device.name");
  }
  r.device = *device;
  r.gpu_name = (*device)["name"].get<std::string>();
  if (const auto v = value.find("versions"); v != value.end() && v->is_object()) r.versions = *v;
  r.passed = true;
  return r;
}

std::string version_text(const json& versions, const char* name) {
  const auto it = versions.find(name);
  if (it == versions.end() || it->is_null()) return "unknown";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The record of one case, parsed once: the documents of the Liger CSV row it would be, then
// kernelwatch's attribution (the software environment, the probe) and, for a failed run, the
// reason instead of the times.
core::Result<core::Record> make_record(const LigerCase& c, const json& requested,
                                       const CaseResult& r, core::Timestamp observed,
                                       const std::string& fallback_gpu,
                                       const json& fallback_versions) {
  LigerSpeedRow row;
  row.kernel = std::string(c.kernel.name());
  row.pass = std::string(core::to_string(c.pass));
  row.provider = std::string(to_string(c.provider));
  const json& versions = r.passed ? r.versions : fallback_versions;
  row.version = version_text(versions, "liger_kernel");
  // The workload through the importer's own mapping of (kernel, x_name, x_value, config).
  row.workload = KW_TRY(liger_workload(row.kernel, requested.at("x_name").get<std::string>(),
                                       std::to_string(requested.at("x_value").get<std::int64_t>()),
                                       requested.at("config").dump()));
  // A failed run's times are removed below; the row's documents need some to be valid.
  row.ms = r.passed ? std::array<double, 3>{r.p20, r.p50, r.p80} : std::array<double, 3>{1, 1, 1};
  row.observed = observed;
  row.hardware = core::hardware_from_gpu_name(r.passed ? r.gpu_name : fallback_gpu);
  json doc = KW_TRY(liger_speed_documents(row));
  json& spec = doc["run"]["spec"];
  spec["sourceNative"]["source"] = std::string(kLigerBenchSource);
  json& labels = doc["run"]["metadata"]["labels"];
  labels["runner"] = std::string(kLigerBenchRunner);
  // The software a timing depends on, in the schema's places: the CUDA runtime torch was built
  // with, torch as the framework, the rest as libraries.
  json software = json::object();
  const auto version = [&](const char* name) -> std::string {
    const auto it = versions.find(name);
    if (it == versions.end() || it->is_null()) return {};
    return core::utf8_prefix(it->is_string() ? it->get<std::string>() : it->dump(), 100);
  };
  if (const std::string cuda = version("cuda"); !cuda.empty()) software["cudaToolkit"] = cuda;
  if (const std::string torch = version("torch"); !torch.empty()) {
    software["framework"] = {{"name", "pytorch"}, {"version", torch}};
  }
  json libraries = json::object();
  for (const char* name : {"triton", "liger_kernel", "python"}) {
    if (const std::string v = version(name); !v.empty()) libraries[name] = v;
  }
  if (!libraries.empty()) software["libraries"] = std::move(libraries);
  doc["environment"]["spec"]["software"] = std::move(software);
  if (r.passed && r.device.contains("index") && r.device["index"].is_number_integer()) {
    labels["gpu_index"] = std::to_string(r.device["index"].get<std::int64_t>());
  }
  json metrics = spec["sourceNative"].value("metrics", json::object());
  kernels::add_sample_metrics(r.before, "before", metrics);
  kernels::add_sample_metrics(r.after, "after", metrics);

  std::string reason = r.reason;
  core::RunStatus status = core::status_for_failure_reason(reason);
  if (r.passed) {
    status = core::RunStatus::Passed;
    reason = kernels::inconclusive_reason(r.before, r.after);
    if (!reason.empty()) status = core::RunStatus::IncompleteEvidence;
  } else {
    spec.erase("timing");
    spec.erase("measurements");
    for (const char* timing_metric : {"ms_20", "ms_50", "ms_80"}) metrics.erase(timing_metric);
  }
  if (metrics.empty()) {
    spec["sourceNative"].erase("metrics");
  } else {
    spec["sourceNative"]["metrics"] = std::move(metrics);
  }
  spec["status"] = std::string(core::to_string(status));
  if (!reason.empty()) {
    doc["run"]["metadata"]["description"] = core::utf8_prefix(reason, core::kMaxStatusReasonBytes);
  }
  spec["environmentDigest"] = core::document_digest(doc["environment"]);
  // Its times are the record's (p20, median, p80): no harness summary stands behind them.
  return core::parse_record(doc);
}

// Why cases without a result line have none, from how the child ended.
std::string missing_reason(const core::Result<ChildResult>& child, const LigerBenchOptions& o,
                           bool any_line) {
  if (!child) {
    if (child.error().code == ErrorCode::NotFound) {
      return "python interpreter not found: " + o.python.string();
    }
    return "runner could not start: " + child.error().message;
  }
  const std::string tail = child->last_stderr_lines(kReasonStderrLines);
  const std::string last = child->last_stderr_lines(1);
  switch (child->end) {
    case ChildEnd::TimedOut:
      return "runner still running after its timeout of " + duration_text(o.timeout) +
             ": killed with everything it started" + (tail.empty() ? "" : "; stderr: " + tail);
    case ChildEnd::Signalled:
      return "runner killed by signal " + std::to_string(child->signal) +
             (tail.empty() ? "" : "; stderr: " + tail);
    case ChildEnd::Cancelled:
      return "runner killed: the daemon is stopping";
    case ChildEnd::Exited:
      break;
  }
  switch (child->exit_code) {
    case 0:
      if (!child->stdout_rest.empty()) {
        return "malformed runner output (a line without its newline): " +
               readable_line(child->stdout_rest, 120);
      }
      if (child->overlong_lines > 0) {
        return "malformed runner output: " + std::to_string(child->overlong_lines) +
               " stdout line(s) longer than " + std::to_string(kMaxLineBytes) +
               " bytes, dropped unread";
      }
      return any_line ? "runner exited without a result for this case"
                      : "runner exited without any result (missing output)";
    case kExitImport:
      return "import failure: " +
             (last.empty() ? std::string("a module cannot be imported") : last);
    case kExitNoCuda:
      return "no CUDA device: " + last;
    case kExitBadRequest:
      return "runner rejected the request: " + last;
    default:
      return "runner exited with status " + std::to_string(child->exit_code) +
             (tail.empty() ? "" : ": " + tail);
  }
}

}  // namespace

std::string_view to_string(LigerProvider provider) noexcept {
  switch (provider) {
    case LigerProvider::Liger:
      return "liger";
    case LigerProvider::Torch:
      return "torch";
    case LigerProvider::Huggingface:
      return "huggingface";
  }
  return "?";
}

core::Result<LigerProvider> parse_liger_provider(std::string_view text) {
  return core::parse_name("liger-bench provider", text, kLigerProviders);
}

std::string liger_bench_kernel_names() {
  std::string out;
  for (const std::string_view name : kLigerBenchKernels) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

core::Result<kernels::KernelRef> parse_liger_bench_kernel(std::string_view text) {
  for (const std::string_view name : kLigerBenchKernels) {
    if (name == text) return kernels::find_kernel(name);
  }
  return core::fail(
      ErrorCode::InvalidArgument,
      "unknown kernel \"" + std::string(text) + "\" (known: " + liger_bench_kernel_names() + ")");
}

bool supports(kernels::KernelRef kernel, LigerProvider provider) noexcept {
  const std::string_view name = kernel.name();
  if (name != "tvd" && name != "layer_norm") return false;
  if (provider == LigerProvider::Liger) return true;
  return name == "tvd" ? provider == LigerProvider::Torch : provider == LigerProvider::Huggingface;
}

std::string providers_of(kernels::KernelRef kernel) {
  const std::string_view name = kernel.name();
  if (name == "tvd") return "liger, torch";
  return name == "layer_norm" ? "liger, huggingface" : "";
}

std::string LigerCase::name() const {
  return std::string(kernel.name()) + "/" + std::string(core::to_string(pass)) + "/" +
         std::string(to_string(provider)) + "/" + std::string(kLigerBenchRunner) + " " +
         workload.label();
}

core::Status validate(const LigerCase& c) {
  const std::string kernel(c.kernel.name());
  if (!supports(c.kernel, c.provider)) {
    return core::fail(ErrorCode::InvalidArgument,
                      "provider \"" + std::string(to_string(c.provider)) +
                          "\" is not one liger-bench runs for " + kernel + " (it runs " +
                          providers_of(c.kernel) + ")");
  }
  if (c.workload.kernel != c.kernel.name()) {
    return core::fail(ErrorCode::InvalidArgument,
                      "\"" + c.workload.label() + "\" is not a " + kernel + " workload");
  }
  if (c.workload.dtype == core::DType::Fp16) {
    return core::fail(ErrorCode::InvalidArgument,
                      "\"" + c.workload.label() + "\": liger-bench runs fp32 and bf16, not fp16");
  }
  if (c.kernel.name() == "layer_norm" && c.provider == LigerProvider::Liger &&
      c.workload.eps != 1e-6) {
    return core::fail(ErrorCode::InvalidArgument,
                      "\"" + c.workload.label() +
                          "\": Liger's LayerNorm benchmark builds LigerLayerNorm with its default "
                          "eps 1e-06 only");
  }
  return {};
}

core::Result<json> request_case(const LigerCase& c) {
  KW_TRY(validate(c));
  json out = {{"kernel", c.kernel.name()},
              {"pass", core::to_string(c.pass)},
              {"provider", to_string(c.provider)}};
  const bool bf16 = c.workload.dtype == core::DType::Bf16;
  if (c.kernel.name() == "tvd") {
    // Liger's history ran B=8, T=2048; only B*T is in the key.
    const std::int64_t batch = c.workload.tokens % 8 == 0 ? 8 : 1;
    json config = {{"B", batch}, {"T", c.workload.tokens / batch}};
    if (bf16) config["dtype"] = "torch.bfloat16";
    out["x_name"] = "V";
    out["x_value"] = c.workload.vocab;
    out["config"] = std::move(config);
  } else {
    out["x_name"] = "N";
    out["x_value"] = c.workload.hidden;
    out["config"] = {{"M", c.workload.rows},
                     {"dtype", bf16 ? "torch.bfloat16" : "torch.float32"},
                     {"eps", c.workload.eps}};
  }
  return out;
}

GpuSampler nvml_sampler() {
  auto nvml = std::make_shared<kernels::Nvml>();
  auto mutex = std::make_shared<std::mutex>();
  return [nvml, mutex](int child_pid) {
    std::lock_guard lock(*mutex);
    if (!nvml->available()) return kernels::GpuSample{};
    std::vector<unsigned> ours;
    if (child_pid > 0) ours.push_back(static_cast<unsigned>(child_pid));
    return nvml->sample("", 0, ours);
  };
}

core::Result<std::filesystem::path> default_script() {
  const std::filesystem::path relative = "runners/liger/liger_bench.py";
  std::vector<std::filesystem::path> candidates;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path().parent_path() / "share/kernelwatch" / relative);
  }
  if (std::string_view(KERNELWATCH_SOURCE_DIR).size() > 0) {
    candidates.push_back(std::filesystem::path(KERNELWATCH_SOURCE_DIR) / relative);
  }
  for (const auto& path : candidates) {
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  std::string tried;
  for (const auto& path : candidates) tried += (tried.empty() ? "" : ", ") + path.string();
  return core::fail(ErrorCode::NotFound, "liger_bench.py not found (looked at " + tried + ")");
}

namespace {

// One call of liger_bench.py: what each case asked for (null where it was refused before
// sending), its result, when it was observed, and the last GPU name and versions a passing case
// reported (the failed cases' records carry them).
struct Batch {
  std::vector<json> requested;
  std::vector<std::optional<CaseResult>> results;
  std::vector<core::Timestamp> observed;
  json request_cases = json::array();
  std::vector<std::size_t> sent;  // request index -> case index
  std::string fallback_gpu;
  json fallback_versions = json::object();

  void fail(std::size_t index, std::string reason) {
    CaseResult r;
    r.reason = std::move(reason);
    results[index] = std::move(r);
  }
};

Batch prepare(const std::vector<LigerCase>& cases, const LigerBenchOptions& options,
              const std::function<core::Timestamp()>& now) {
  Batch batch;
  batch.requested.resize(cases.size());
  batch.results.resize(cases.size());
  batch.observed.assign(cases.size(), now());
  batch.fallback_gpu = options.fallback_gpu_name;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto request = request_case(cases[i]);
    if (!request) {
      batch.fail(i, request.error().message);
      continue;
    }
    batch.requested[i] = *request;
    batch.request_cases.push_back(*request);
    batch.sent.push_back(i);
  }
  return batch;
}

// The script run once with every sent case on its stdin; each line it prints is the next case's
// result, with the GPU sampled around it; the cases it printed no line for fail with why.
void run_script(const LigerBenchOptions& options, const std::filesystem::path& script,
                const std::function<core::Timestamp()>& now, Batch& batch) {
  ChildRequest request;
  request.argv = {options.python.string(), script.string()};
  request.stdin_text = json{{"cases", batch.request_cases}}.dump() + "\n";
  request.timeout = options.timeout;
  request.kill_grace = options.kill_grace;
  request.environment = options.environment;
  request.max_line_bytes = kMaxLineBytes;
  request.cancel_fd = options.cancel_fd;
  int child_pid = 0;
  kernels::GpuSample last;
  if (options.sampler) last = options.sampler(0);  // before the child exists
  request.on_spawn = [&](int pid) { child_pid = pid; };
  std::size_t next = 0;
  bool any_line = false;
  const auto child = run_child(request, [&](std::string_view line) {
    if (line.empty()) return;
    any_line = true;
    if (next >= batch.sent.size()) return;  // more lines than cases: ignored
    const std::size_t index = batch.sent[next++];
    CaseResult r = parse_line(line, batch.requested[index]);
    batch.observed[index] = now();
    r.before = last;
    if (options.sampler) last = options.sampler(child_pid);
    r.after = last;
    if (r.passed) {
      batch.fallback_gpu = r.gpu_name;
      batch.fallback_versions = r.versions;
    }
    batch.results[index] = std::move(r);
  });
  const std::string reason = missing_reason(child, options, any_line);
  for (std::size_t k = next; k < batch.sent.size(); ++k) {
    batch.fail(batch.sent[k], reason);
    batch.observed[batch.sent[k]] = now();
  }
}

// The request of a case refused before sending, so that its failed run lands in the key its
// workload names.
json refused_request(const LigerCase& c) {
  const bool tvd = c.kernel.name() == "tvd";
  return {
      {"x_name", tvd ? "V" : "N"},
      {"x_value", tvd ? c.workload.vocab : c.workload.hidden},
      {"config", tvd ? json{{"B", 1}, {"T", c.workload.tokens}} : json{{"M", c.workload.rows}}}};
}

}  // namespace

std::vector<core::Record> run_liger_bench(const LigerBenchOptions& options,
                                          const std::vector<LigerCase>& cases,
                                          const std::function<core::Timestamp()>& now) {
  Batch batch = prepare(cases, options, now);
  std::filesystem::path script = options.script;
  if (script.empty() && !batch.sent.empty()) {
    if (auto found = default_script()) {
      script = *found;
    } else {
      for (std::size_t i : batch.sent) batch.fail(i, found.error().message);
      batch.sent.clear();
    }
  }
  if (!batch.sent.empty()) run_script(options, script, now, batch);

  std::vector<core::Record> out;
  out.reserve(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json request =
        batch.requested[i].is_null() ? refused_request(cases[i]) : batch.requested[i];
    auto outcome = make_record(cases[i], request, *batch.results[i], batch.observed[i],
                               batch.fallback_gpu, batch.fallback_versions);
    if (!outcome) {
      // Only a result the CSV mapping refuses gets here; it is a failed run all the same.
      CaseResult r;
      r.reason = "result not recordable: " + outcome.error().message;
      outcome = make_record(cases[i], request, r, batch.observed[i], batch.fallback_gpu,
                            batch.fallback_versions);
    }
    KW_ASSERT(static_cast<bool>(outcome), "a failed liger-bench run always maps to a record");
    out.push_back(std::move(*outcome));
  }
  return out;
}

}  // namespace kernelwatch::runners
