#include "kernels/harness/record.hpp"

#include <cmath>

#include "core/digest.hpp"
#include "core/kernelindex_schema.hpp"
#include "core/kernelwatch_protocol.hpp"
#include "core/key.hpp"
#include "kernels/catalogue.hpp"

namespace kernelwatch::kernels {
namespace {

using nlohmann::json;

std::string timer_name(Backend backend) {
  return backend == Backend::Cuda ? "cuda_events" : "steady_clock";
}

std::string harness_name(Backend backend) {
  return backend == Backend::Cuda ? "kernelwatch-cuda-events" : "kernelwatch-cpu-steady-clock";
}

core::OwnProtocolSettings protocol_settings(const RunContext& c) {
  core::OwnProtocolSettings settings;
  settings.harness = harness_name(c.id.backend);
  settings.timer = timer_name(c.id.backend);
  settings.pass = std::string(to_string(c.id.pass));
  settings.warmup_ms = c.policy.warmup.count();
  settings.repetition_ms = c.policy.repetitions.count();
  settings.min_repetitions = c.policy.min_repetitions;
  settings.max_repetitions = c.policy.max_repetitions;
  settings.flush_bytes = static_cast<std::int64_t>(c.flush_bytes);
  return settings;
}

json protocol_document(const RunContext& c) {
  const std::string pass(to_string(c.id.pass));
  const std::string harness = harness_name(c.id.backend);
  return json{
      {"apiVersion", core::kApiVersion},
      {"kind", "BenchmarkProtocol"},
      {"spec", core::own_protocol_spec(protocol_settings(c))},
      {"metadata",
       {{"name", harness + "-" + pass},
        {"title", std::string(c.id.backend == Backend::Cuda ? "kernelwatch CUDA events"
                                                            : "kernelwatch CPU steady clock") +
                      " \u00b7 " + pass + " pass"}}}};
}

core::Hardware hardware_of(const RunContext& c) {
  if (c.hardware) return *c.hardware;
  if (c.gpu) {
    core::Hardware hw = core::hardware_from_gpu_name(c.gpu->name);
    if (c.gpu->compute_major > 0) {  // else the name's (NVML may not say)
      hw.architecture =
          "sm_" + std::to_string(c.gpu->compute_major) + std::to_string(c.gpu->compute_minor);
    }
    return hw;
  }
  return cpu_hardware(c.cpu);
}

// The host or GPU the run measured, as the public schema describes it: hardware identity and
// memory, the software a timing depends on (driver, CUDA runtime). What changes from run to run
// (clocks, temperature, other processes) is the run's, not the environment's.
json environment_document(const RunContext& c, const core::Hardware& hw) {
  json doc = json{{"apiVersion", core::kApiVersion},
                  {"kind", "ExecutionEnvironment"},
                  {"spec", core::environment_document_spec(hw)},
                  {"metadata",
                   {{"name", "kernelwatch-" + core::environment_label(hw)},
                    {"title", "kernelwatch host \u00b7 " + hw.product +
                                  (hw.form_factor.empty() ? "" : " " + hw.form_factor)}}}};
  json& spec = doc["spec"];
  const std::uint64_t memory = c.gpu ? c.gpu->memory_bytes : c.cpu.memory_bytes;
  if (memory > 0) spec["hardware"]["memoryBytes"] = memory;
  json software = json::object();
  if (c.gpu) {
    if (!c.gpu->driver_version.empty()) software["driver"] = c.gpu->driver_version;
    if (!c.gpu->runtime_version.empty()) software["cudaToolkit"] = c.gpu->runtime_version;
  }
  spec["software"] = std::move(software);
  return doc;
}

json latency(const char* statistic, std::chrono::nanoseconds value) {
  return json{
      {"metric", "latency"}, {"statistic", statistic}, {"unit", "ns"}, {"value", value.count()}};
}

}  // namespace

double achieved_gbps(std::int64_t bytes, double ns) {
  return ns > 0 ? static_cast<double>(bytes) / ns : 0.0;  // bytes per ns == GB/s
}

core::Record make_record(const RunContext& c) {
  const core::Workload workload = workload_of(c.id.kernel, c.spec);
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
  json metrics = {{"bytes_moved", bytes_moved(c.id, c.spec)},
                  {"host_logical_cores", c.cpu.logical_cores}};
  if (c.gpu) {
    metrics["host_memory_bytes"] = c.cpu.memory_bytes;
    metrics["gpu_sm_count"] = c.gpu->sm_count;
    metrics["gpu_l2_bytes"] = c.gpu->l2_bytes;
    add_sample_metrics(c.before, "before", metrics);
    add_sample_metrics(c.after, "after", metrics);
  }
  if (c.timings && !c.timings->samples_ns.empty()) {
    const Summary s = summarize(c.timings->samples_ns);
    const auto mean = std::chrono::nanoseconds{std::llround(s.mean_ns)};
    spec["timing"] = {{"latencyNs",
                       {{"median", s.median.count()},
                        {"mean", mean.count()},
                        {"minimum", s.min.count()},
                        {"maximum", s.max.count()}}},
                      {"primaryStatistic", "median"},
                      {"samples", s.count}};
    spec["measurements"] =
        json::array({latency("p20", s.p20), latency("p80", s.p80), latency("min", s.min),
                     latency("max", s.max), latency("mean", mean)});
    metrics["repetitions"] = s.count;
    metrics["warmup_runs"] = c.timings->warmup_runs;
    metrics["achieved_gbps"] =
        achieved_gbps(bytes_moved(c.id, c.spec), static_cast<double>(s.median.count()));
    if (c.gpu && c.gpu->peak_bandwidth_gbps > 0) {
      metrics["bandwidth_fraction"] =
          metrics["achieved_gbps"].get<double>() / c.gpu->peak_bandwidth_gbps;
    }
  }
  spec["sourceNative"] = {{"source", std::string(kHarnessSource)},
                          {"benchmark", benchmark},
                          {"externalId", benchmark + "/" + provider + "/" + environment + "/" +
                                             workload.label() + "/" + stamp},
                          {"metrics", std::move(metrics)}};
  spec["protocolDigest"] = core::document_digest(protocol);
  spec["workloadDigest"] = workload.digest();
  spec["environmentDigest"] = core::document_digest(environment_doc);
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
  if (c.gpu && !c.gpu->uuid.empty()) labels["gpu_uuid"] = c.gpu->uuid;
  if (c.gpu) labels["gpu_index"] = std::to_string(c.gpu->index);
  json metadata = {
      {"name", core::document_name("kernelwatch-" + kernel_slug + "-" +
                                   std::string(to_string(c.id.pass)) + "-" + provider + "-" +
                                   environment + "-" + workload.label() + "-" + stamp)},
      {"title", std::string(c.id.kernel->title) + " \u00b7 " + provider + " \u00b7 " +
                    std::string(to_string(c.id.pass))},
      {"labels", std::move(labels)}};
  if (!c.reason.empty()) metadata["description"] = c.reason;
  const json run = {{"apiVersion", core::kApiVersion},
                    {"kind", "BenchmarkRun"},
                    {"spec", std::move(spec)},
                    {"metadata", std::move(metadata)}};
  auto record = core::parse_record(
      json{{"run", run}, {"protocol", protocol}, {"environment", environment_doc}});
  KW_ASSERT(record.has_value(), "the harness builds records core can parse");
  return std::move(*record);
}

}  // namespace kernelwatch::kernels
