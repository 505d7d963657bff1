// NVIDIA nvbench's JSON output (--json FILE), as written by nvbench/json_printer.cu: "meta"
// (argv, version.nvbench.string), "devices" (id, name, sm_version, ...), and "benchmarks", each
// with "states": one per point of its axes, with the device id, "axis_values" ({name, type,
// value}), "summaries" ({tag, hint, data: [{name: "value", type, value}]}), "is_skipped" and
// "skip_reason". Every value is written as a string (int64 and float64 alike); times are
// seconds (hint "duration"). Cold measurements: nv/cold/time/gpu/{mean, min, max, q1, median,
// q3, stdev/absolute} (median and quartiles only in nvbench releases with its robust metrics),
// nv/cold/sample_size.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/json_limits.hpp"
#include "runners/child_process.hpp"
#include "runners/formats.hpp"

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;
using nlohmann::json;

constexpr std::string_view kGpuTime = "nv/cold/time/gpu/";

std::string text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  return "";
}

// A summary's "value" datum, as written: a string holding a number.
std::optional<double> number_of(const json& summary, std::string& hint) {
  hint = summary.value("hint", std::string());
  const auto data = summary.find("data");
  if (data == summary.end() || !data->is_array()) return std::nullopt;
  for (const json& datum : *data) {
    if (!datum.is_object() || datum.value("name", std::string()) != "value") continue;
    const std::string text = text_of(datum.value("value", json()));
    if (text.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) return std::nullopt;
    return v;  // "nan" and "inf" parse, and are refused by check_times
  }
  return std::nullopt;
}

// The nvbench release that wrote the file (meta.version.nvbench.string), or "".
std::string harness_version_of(const json& root) {
  const auto meta = root.find("meta");
  if (meta == root.end() || !meta->is_object()) return "";
  const auto version = meta->find("version");
  if (version == meta->end() || !version->is_object()) return "";
  const auto nvbench = version->find("nvbench");
  if (nvbench == version->end() || !nvbench->is_object()) return "";
  return text_of(nvbench->value("string", json()));
}

// The devices' names by their id.
std::map<std::int64_t, std::string> devices_of(const json& root) {
  std::map<std::int64_t, std::string> devices;
  const auto list = root.find("devices");
  if (list == root.end() || !list->is_array()) return devices;
  for (const json& d : *list) {
    if (d.is_object() && d.contains("id") && d["id"].is_number_integer()) {
      devices[d["id"].get<std::int64_t>()] = text_of(d.value("name", json()));
    }
  }
  return devices;
}

// A state's cold GPU times in seconds by name ("median", "q1", ...), and its sample count into
// `r`; `unit_error` says which time has a unit other than seconds.
std::map<std::string, double> gpu_seconds_of(const json& state, NativeResult& r,
                                             std::string& unit_error) {
  std::map<std::string, double> seconds;
  const auto summaries = state.find("summaries");
  if (summaries == state.end() || !summaries->is_array()) return seconds;
  for (const json& summary : *summaries) {
    if (!summary.is_object()) continue;
    const std::string tag = summary.value("tag", std::string());
    std::string hint;
    const auto value = number_of(summary, hint);
    if (!value) continue;
    if (tag == "nv/cold/sample_size") {
      r.samples = static_cast<std::int64_t>(*value);
      continue;
    }
    if (tag.rfind(kGpuTime, 0) != 0) continue;
    const std::string name = tag.substr(kGpuTime.size());
    if (name == "stdev/relative" || name == "iqr/relative") continue;
    if (hint != "duration") {
      unit_error = "unknown unit of " + tag + " (hint \"" + readable_line(hint, 40) +
                   "\"; seconds are \"duration\")";
      continue;
    }
    seconds[name] = *value;
  }
  return seconds;
}

// One state's result: its axes as parameters, its device, its median (else its mean, which sets
// `mean_only`) and statistics in nanoseconds, or why it has none.
NativeResult result_of(const std::string& benchmark, const json& state,
                       std::map<std::int64_t, std::string>& devices, bool& mean_only) {
  NativeResult r;
  r.name = benchmark;
  if (state.contains("axis_values") && state["axis_values"].is_array()) {
    for (const json& axis : state["axis_values"]) {
      if (!axis.is_object()) continue;
      r.params.emplace_back(text_of(axis.value("name", json())),
                            text_of(axis.value("value", json())));
    }
  }
  std::sort(r.params.begin(), r.params.end());
  if (state.contains("device") && state["device"].is_number_integer()) {
    const auto id = state["device"].get<std::int64_t>();
    r.device = devices.contains(id) ? devices[id] : "device " + std::to_string(id);
  }
  std::string unit_error;
  const std::map<std::string, double> seconds = gpu_seconds_of(state, r, unit_error);
  const auto ns = [&](const char* name) -> std::optional<double> {
    const auto it = seconds.find(name);
    return it == seconds.end() ? std::nullopt : std::optional<double>(it->second * 1e9);
  };
  if (!unit_error.empty()) {
    r.outcome = NativeResult::Outcome::Failed;
    r.failure = unit_error;
    return r;
  }
  if (const auto median = ns("median")) {
    r.primary_ns = *median;
  } else if (const auto mean = ns("mean")) {
    r.primary = "mean";
    r.primary_ns = *mean;
    mean_only = true;
  } else {
    r.outcome = NativeResult::Outcome::Failed;
    r.failure = "no nv/cold/time/gpu/median or nv/cold/time/gpu/mean summary";
    return r;
  }
  for (const auto& [from, to] :
       std::initializer_list<std::pair<const char*, const char*>>{{"q1", "q1"},
                                                                  {"q3", "q3"},
                                                                  {"min", "min"},
                                                                  {"max", "max"},
                                                                  {"stdev/absolute", "stddev"}}) {
    if (const auto v = ns(from)) r.statistics.push_back({to, *v});
  }
  if (r.primary != "mean") {
    if (const auto v = ns("mean")) r.statistics.push_back({"mean", *v});
  }
  check_times(r);
  return r;
}

}  // namespace

core::Result<ParsedOutput> parse_nvbench_json(std::string_view text) {
  auto parsed = core::parse_json_text(text);
  if (!parsed) {
    return core::fail(ErrorCode::ParseError,
                      "not nvbench JSON: " + readable_line(parsed.error().message, 200));
  }
  const json& root = *parsed;
  if (!root.is_object() || !root.contains("benchmarks") || !root["benchmarks"].is_array()) {
    return core::fail(ErrorCode::ParseError,
                      "not nvbench JSON: expected an object with a \"benchmarks\" array");
  }
  ParsedOutput out;
  out.timer = "cuda_events";
  out.harness_version = harness_version_of(root);
  std::map<std::int64_t, std::string> devices = devices_of(root);
  bool any_mean_only = false;
  for (const json& bench : root["benchmarks"]) {
    if (!bench.is_object() || !bench.contains("name") || !bench["name"].is_string() ||
        !bench.contains("states") || !bench["states"].is_array()) {
      return core::fail(ErrorCode::ParseError,
                        "not nvbench JSON: a benchmark without a name or states");
    }
    for (const json& state : bench["states"]) {
      if (!state.is_object()) {
        return core::fail(ErrorCode::ParseError, "not nvbench JSON: a state is not an object");
      }
      if (state.value("is_skipped", false)) {
        ++out.skipped;
        continue;
      }
      out.results.push_back(
          result_of(bench["name"].get<std::string>(), state, devices, any_mean_only));
    }
  }
  out.statistics_note =
      any_mean_only
          ? "cold GPU time (CUDA events) in seconds; median: nv/cold/time/gpu/median where the "
            "output has it, else the MEAN nv/cold/time/gpu/mean (this nvbench writes no median); "
            "q1/q3 are nvbench's quartiles, not p20/p80"
          : "cold GPU time (CUDA events) in seconds; median: nv/cold/time/gpu/median; q1/q3 are "
            "nvbench's quartiles, not p20/p80";
  return out;
}

}  // namespace kernelwatch::runners
