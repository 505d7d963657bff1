// pytest-benchmark's --benchmark-json FILE, as written by pytest_benchmark/session.py and
// stats.py: "version" (pytest-benchmark's), "machine_info", "commit_info", "datetime", and
// "benchmarks", each with "name" ("test_x[4096-bf16]"), "fullname", "group", "params" (the
// parametrize arguments, or null), "param" (their id), "options" (timer, rounds, ...) and
// "stats": min, max, mean, stddev, rounds, median, iqr, q1, q3, ..., "data" (every round's time
// per iteration, always in --benchmark-json output) and "iterations"; times in seconds.
// Failed and skipped tests are not in the output.
#include <algorithm>

#include "core/json_limits.hpp"
#include "kernels/harness/statistics.hpp"
#include "runners/child_process.hpp"
#include "runners/formats.hpp"

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;
using nlohmann::json;

std::string value_text(const json& value) {
  return value.is_string() ? value.get<std::string>() : core::printable_json(value);
}

// The machine pytest-benchmark ran on ("machine_info"), as environment pairs.
void read_machine(const json& machine, ParsedOutput& out) {
  if (!machine.is_object()) return;
  const auto field = [&](const char* name, const json& v) {
    if (v.is_string() && !v.get<std::string>().empty()) {
      out.environment.emplace_back(name, readable_line(v.get<std::string>(), 200));
    }
  };
  field("node", machine.value("node", json()));
  field("machine", machine.value("machine", json()));
  if (const auto cpu = machine.find("cpu"); cpu != machine.end() && cpu->is_object()) {
    field("cpu", cpu->value("brand_raw", json()));
  }
  field("python_implementation", machine.value("python_implementation", json()));
  field("python_version", machine.value("python_version", json()));
}

// A benchmark's identity: its name without the parametrize id, its full name, its parameters
// (or its id as "param" where the output has no "params") and its timer.
void read_identity(const json& bench, NativeResult& r) {
  const std::string name = bench["name"].get<std::string>();
  if (bench.contains("fullname") && bench["fullname"].is_string()) {
    r.native_id = bench["fullname"].get<std::string>();
  }
  r.name = name.substr(0, name.find('['));
  if (bench.contains("params") && bench["params"].is_object()) {
    for (const auto& [key, value] : bench["params"].items()) {
      r.params.emplace_back(key, value_text(value));
    }
  } else if (bench.contains("param") && bench["param"].is_string()) {
    r.params.emplace_back("param", bench["param"].get<std::string>());
  }
  std::sort(r.params.begin(), r.params.end());
  if (bench.contains("options") && bench["options"].is_object() &&
      bench["options"].contains("timer") && bench["options"]["timer"].is_string()) {
    r.settings.push_back("timer:" + bench["options"]["timer"].get<std::string>());
  }
}

// A benchmark's times from its "stats" (seconds, into nanoseconds): the median, p20/p80 over
// every round's time, pytest-benchmark's own statistics, rounds and iterations; or why not.
void read_stats(const json& stats, NativeResult& r) {
  const auto seconds = [&](const char* key) -> std::optional<double> {
    const auto it = stats.find(key);
    if (it == stats.end() || !it->is_number()) return std::nullopt;
    return it->get<double>() * 1e9;
  };
  const auto median = seconds("median");
  if (!median) {
    r.outcome = NativeResult::Outcome::Failed;
    r.failure = "stats.median is missing or not a number";
    return;
  }
  r.primary_ns = *median;
  std::vector<double> data;
  if (const auto it = stats.find("data"); it != stats.end() && it->is_array()) {
    for (const json& v : *it) {
      if (v.is_number()) data.push_back(v.get<double>() * 1e9);
    }
  }
  r.samples_ns = data;
  std::sort(data.begin(), data.end());
  if (data.size() >= 2) {
    r.statistics.push_back({"p20", kernels::quantile_sorted(data, 0.2)});
    r.statistics.push_back({"p80", kernels::quantile_sorted(data, 0.8)});
  }
  for (const auto& [from, to] :
       std::initializer_list<std::pair<const char*, const char*>>{{"q1", "q1"},
                                                                  {"q3", "q3"},
                                                                  {"min", "min"},
                                                                  {"max", "max"},
                                                                  {"mean", "mean"},
                                                                  {"stddev", "stddev"}}) {
    if (const auto v = seconds(from)) r.statistics.push_back({to, *v});
  }
  if (const auto rounds = stats.find("rounds"); rounds != stats.end() && rounds->is_number()) {
    r.samples = rounds->get<std::int64_t>();
    r.metrics["rounds"] = r.samples;
  }
  if (const auto it = stats.find("iterations"); it != stats.end() && it->is_number()) {
    r.metrics["iterations"] = *it;
  }
  check_times(r);
}

}  // namespace

core::Result<ParsedOutput> parse_pytest_benchmark_json(std::string_view text) {
  auto parsed = core::parse_json_text(text);
  if (!parsed) {
    if (text.find("NaN") != std::string_view::npos ||
        text.find("Infinity") != std::string_view::npos) {
      return core::fail(ErrorCode::ParseError,
                        "pytest-benchmark JSON with a NaN or infinite time (not a number JSON "
                        "has)");
    }
    return core::fail(ErrorCode::ParseError,
                      "not pytest-benchmark JSON: " + readable_line(parsed.error().message, 200));
  }
  const json& root = *parsed;
  if (!root.is_object() || !root.contains("benchmarks") || !root["benchmarks"].is_array() ||
      !root.contains("machine_info")) {
    return core::fail(ErrorCode::ParseError,
                      "not pytest-benchmark JSON: expected an object with \"machine_info\" and a "
                      "\"benchmarks\" array");
  }
  ParsedOutput out;
  if (root.contains("version") && root["version"].is_string()) {
    out.harness_version = root["version"].get<std::string>();
  }
  out.timer = "perf_counter";
  read_machine(root["machine_info"], out);
  for (const json& bench : root["benchmarks"]) {
    if (!bench.is_object() || !bench.contains("name") || !bench["name"].is_string() ||
        !bench.contains("stats") || !bench["stats"].is_object()) {
      return core::fail(ErrorCode::ParseError,
                        "not pytest-benchmark JSON: a benchmark without a name or stats");
    }
    NativeResult r;
    read_identity(bench, r);
    read_stats(bench["stats"], r);
    out.results.push_back(std::move(r));
  }
  out.statistics_note =
      "seconds per iteration of each round; median: stats.median; p20/p80: linear interpolation "
      "over stats.data (every round); q1/q3 are pytest-benchmark's quartiles";
  return out;
}

}  // namespace kernelwatch::runners
