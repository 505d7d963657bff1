#include "kernels/harness/record.hpp"

#include <cmath>

#include "core/digest.hpp"
#include "core/key.hpp"

namespace kernelwatch::kernels {
namespace {

using nlohmann::json;

std::string timer_name(Backend backend) {
  return backend == Backend::Cuda ? "cuda_events" : "steady_clock";
}

std::string harness_name(Backend backend) {
  return backend == Backend::Cuda ? "kernelwatch-cuda-events" : "kernelwatch-cpu-steady-clock";
}

std::string kernel_title(Kernel kernel) {
  return kernel == Kernel::LayerNorm ? "LayerNorm" : "Total variation distance loss";
}

json protocol_document(const RunContext& c) {
  const std::string pass(to_string(c.id.pass));
  const std::string harness = harness_name(c.id.backend);
  json spec = {
      {"harness", {{"name", harness}, {"repository", "kernelwatch"}}},
      {"measurement",
       {{"timer", timer_name(c.id.backend)},
        {"primaryStatistic", "median"},
        {"statistics", json::array({"p20", "median", "p80"})},
        {"quantiles", "linear interpolation between order statistics (torch.quantile)"}}},
      {"timedPass", pass},
      {"repetition",
       {{"warmupMs", c.policy.warmup.count()},
        {"repetitionMs", c.policy.repetitions.count()},
        {"minRepetitions", c.policy.min_repetitions},
        {"maxRepetitions", c.policy.max_repetitions}}},
      {"cache",
       {{"flushBytes", c.flush_bytes},
        {"flush", "a buffer larger than the last-level cache, read before each repetition"}}},
      {"comparability",
       {{"family", "kernelwatch"},
        {"notes",
         "Timed: the " + pass +
             " pass of one kernel case on seeded random inputs (a random upstream gradient for "
             "backward), outputs written, never accumulated. Comparable only within one kernel, "
             "provider, workload, timed pass and hardware."}}}};
  return json{
      {"apiVersion", core::kApiVersion},
      {"kind", "BenchmarkProtocol"},
      {"spec", std::move(spec)},
      {"metadata",
       {{"name", harness + "-" + pass},
        {"title", std::string(c.id.backend == Backend::Cuda ? "kernelwatch CUDA events"
                                                            : "kernelwatch CPU steady clock") +
                      " \u00b7 " + pass + " pass"}}}};
}

core::Hardware hardware_of(const RunContext& c) {
  if (c.gpu) {
    core::Hardware hw = core::hardware_from_gpu_name(c.gpu->name);
    hw.architecture =
        "sm_" + std::to_string(c.gpu->compute_major) + std::to_string(c.gpu->compute_minor);
    return hw;
  }
  return cpu_hardware(c.cpu);
}

json environment_document(const RunContext& c, const core::Hardware& hw) {
  json software = json::object();
  software["host"] = {{"cpu", c.cpu.model},
                      {"logicalCores", c.cpu.logical_cores},
                      {"memoryBytes", c.cpu.memory_bytes}};
  if (c.gpu) {
    software["gpu"] = {{"uuid", c.gpu->uuid},
                       {"computeCapability", std::to_string(c.gpu->compute_major) + "." +
                                                 std::to_string(c.gpu->compute_minor)},
                       {"smCount", c.gpu->sm_count},
                       {"memoryBytes", c.gpu->memory_bytes},
                       {"l2Bytes", c.gpu->l2_bytes}};
    software["driver"] = c.gpu->driver_version;
    software["cudaRuntime"] = c.gpu->runtime_version;
    software["before"] = to_json(c.before);
    software["after"] = to_json(c.after);
  }
  json doc = json{{"apiVersion", core::kApiVersion},
                  {"kind", "ExecutionEnvironment"},
                  {"spec", core::environment_identity(hw)["spec"]},
                  {"metadata",
                   {{"name", "kernelwatch-" + core::environment_label(hw)},
                    {"title", "kernelwatch host \u00b7 " + hw.product +
                                  (hw.form_factor.empty() ? "" : " " + hw.form_factor)}}}};
  doc["spec"]["software"] = std::move(software);
  return doc;
}

json latency(const char* statistic, std::chrono::nanoseconds value) {
  return json{
      {"metric", "latency"}, {"statistic", statistic}, {"unit", "ns"}, {"value", value.count()}};
}

}  // namespace

core::Workload workload_of(const CaseId& id, const CaseSpec& spec) {
  if (id.kernel == Kernel::LayerNorm)
    return core::Workload::layer_norm(spec.rows, spec.cols, spec.dtype, spec.eps);
  return core::Workload::tvd(spec.rows, spec.cols, spec.dtype);
}

double achieved_gbps(std::int64_t bytes, double ns) {
  return ns > 0 ? static_cast<double>(bytes) / ns : 0.0;  // bytes per ns == GB/s
}

core::Record make_record(const RunContext& c) {
  const core::Workload workload = workload_of(c.id, c.spec);
  const core::Hardware hw = hardware_of(c);
  const std::string environment = core::environment_label(hw);
  const std::string benchmark = c.id.benchmark();
  const std::string provider(to_string(c.id.provider));
  const std::string stamp = core::format_id_timestamp(c.observed_at);
  const json protocol = protocol_document(c);
  const json environment_doc = environment_document(c, hw);
  const json implementation = {{"provider", provider},
                               {"version", c.build.version},
                               {"gitCommit", c.build.git_commit},
                               {"sourceDigest", c.build.source_digest}};

  json spec = {{"status", core::to_string(c.status)},
               {"observedAt", core::format_timestamp(c.observed_at)}};
  json metrics = {{"bytesMoved", bytes_moved(c.id, c.spec)}, {"backend", to_string(c.id.backend)}};
  if (c.timings && !c.timings->samples_ns.empty()) {
    const Summary s = summarize(c.timings->samples_ns);
    spec["timing"] = {{"latencyNs", {{"median", s.median.count()}}},
                      {"primaryStatistic", "median"}};
    spec["measurements"] = json::array(
        {latency("p20", s.p20),
         latency("p80", s.p80),
         latency("min", s.min),
         latency("max", s.max),
         latency("mean", std::chrono::nanoseconds{std::llround(s.mean_ns)}),
         {{"metric", "repetitions"}, {"statistic", "count"}, {"unit", "1"}, {"value", s.count}}});
    metrics["repetitions"] = s.count;
    metrics["warmupRuns"] = c.timings->warmup_runs;
    metrics["achievedGBps"] =
        achieved_gbps(bytes_moved(c.id, c.spec), static_cast<double>(s.median.count()));
    if (c.gpu && c.gpu->peak_bandwidth_gbps > 0) {
      metrics["bandwidthFraction"] =
          metrics["achievedGBps"].get<double>() / c.gpu->peak_bandwidth_gbps;
    }
  }
  if (!c.reason.empty()) spec["statusReason"] = c.reason;
  spec["sourceNative"] = {{"source", "kernelwatch"},
                          {"benchmark", benchmark},
                          {"externalId", benchmark + "/" + provider + "/" + environment + "/" +
                                             workload.label() + "/" + stamp},
                          {"metrics", std::move(metrics)}};
  spec["protocolDigest"] = core::document_digest(protocol);
  spec["workloadDigest"] = workload.digest();
  spec["environmentDigest"] = core::document_digest(core::environment_identity(hw));
  spec["implementationDigest"] = core::digest_of(implementation);

  std::string kernel_slug(to_string(c.id.kernel));
  for (char& ch : kernel_slug) ch = ch == '_' ? '-' : ch;
  json labels = {{"provider", provider},
                 {"workload", workload.label()},
                 {"environment", environment},
                 {"backend", to_string(c.id.backend)},
                 {"kernelwatch_version", c.build.version}};
  if (!c.build.git_commit.empty()) labels["git_commit"] = c.build.git_commit;
  if (!c.build.source_digest.empty()) labels["source_digest"] = c.build.source_digest;
  const json run = {
      {"apiVersion", core::kApiVersion},
      {"kind", "BenchmarkRun"},
      {"spec", std::move(spec)},
      {"metadata",
       {{"name", "kernelwatch-" + kernel_slug + "-" + std::string(to_string(c.id.pass)) + "-" +
                     provider + "-" + environment + "-" + workload.label() + "-" + stamp},
        {"title", kernel_title(c.id.kernel) + " \u00b7 " + provider + " \u00b7 " +
                      std::string(to_string(c.id.pass))},
        {"labels", std::move(labels)}}}};
  auto record = core::parse_record(
      json{{"run", run}, {"protocol", protocol}, {"environment", environment_doc}});
  KW_ASSERT(record.has_value(), "the harness builds records core can parse");
  return std::move(*record);
}

}  // namespace kernelwatch::kernels
