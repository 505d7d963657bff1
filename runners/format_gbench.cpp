// Google Benchmark's JSON reporter (--benchmark_format=json or --benchmark_out), as written by
// src/json_reporter.cc: a "context" object and a "benchmarks" array of rows. A row is one
// repetition (run_type "iteration") or an aggregate over a benchmark's repetitions (run_type
// "aggregate", aggregate_name "mean", "median", "stddev", "cv", or a user statistic) of the
// benchmark named by its run_name; real_time and cpu_time are per iteration in time_unit;
// error_occurred marks a benchmark that failed (error_message), skipped one skipped by the
// program (skip_message). Big-O and RMS rows have no time of their own and are not runs.
#include <algorithm>
#include <cmath>
#include <map>

#include "core/json_limits.hpp"
#include "kernels/harness/statistics.hpp"
#include "runners/child_process.hpp"
#include "runners/formats.hpp"

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;
using nlohmann::json;

// Run settings Google Benchmark appends to a name ("BM_x/8/repeats:10/real_time"): they say how
// it was timed, not what, so they belong to the protocol.
bool is_setting(std::string_view name) {
  return name == "repeats" || name == "min_time" || name == "min_warmup_time" ||
         name == "iterations" || name == "real_time" || name == "manual_time" ||
         name == "process_time";
}

std::optional<double> unit_ns(std::string_view unit) {
  if (unit == "ns") return 1.0;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  return std::nullopt;
}

// One benchmark's rows, gathered by run_name.
struct Gathered {
  std::size_t order = 0;
  std::vector<double> repetitions_ns;
  std::vector<double> cpu_ns;
  std::map<std::string, double> aggregates_ns;  // by aggregate_name, time unit only
  std::optional<std::string> error;
  bool skipped = false;
  std::string unit_error;
  std::int64_t iterations = 0;
  std::int64_t threads = 1;
  json counters = json::object();
  std::string label;
};

// The row keys the reporter itself writes; anything else on a row is a user counter.
bool is_row_key(const std::string& key) {
  static const char* const keys[] = {"name",
                                     "family_index",
                                     "per_family_instance_index",
                                     "run_name",
                                     "run_type",
                                     "repetitions",
                                     "repetition_index",
                                     "threads",
                                     "aggregate_name",
                                     "aggregate_unit",
                                     "error_occurred",
                                     "error_message",
                                     "skipped",
                                     "skip_message",
                                     "iterations",
                                     "real_time",
                                     "cpu_time",
                                     "time_unit",
                                     "cpu_coefficient",
                                     "real_coefficient",
                                     "big_o",
                                     "rms",
                                     "label",
                                     "allocs_per_iter",
                                     "max_bytes_used",
                                     "total_allocated_bytes",
                                     "net_heap_growth"};
  return std::any_of(std::begin(keys), std::end(keys), [&](const char* k) { return key == k; });
}

std::string snake(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool upper = c >= 'A' && c <= 'Z';
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || upper;
    out += keep ? static_cast<char>(upper ? c - 'A' + 'a' : c) : '_';
  }
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z')) out = "c_" + out;
  return out;
}

void split_name(const std::string& run_name, NativeResult& r) {
  std::size_t start = 0;
  std::size_t index = 0;
  std::size_t positional = 0;
  while (start <= run_name.size()) {
    std::size_t end = run_name.find('/', start);
    if (end == std::string::npos) end = run_name.size();
    const std::string part = run_name.substr(start, end - start);
    if (index++ == 0) {
      r.name = part;
    } else if (const auto colon = part.find(':'); colon != std::string::npos) {
      const std::string key = part.substr(0, colon);
      if (is_setting(key)) {
        r.settings.push_back(part);
      } else {
        r.params.emplace_back(key, part.substr(colon + 1));
      }
    } else if (is_setting(part)) {
      r.settings.push_back(part);
    } else if (!part.empty()) {
      r.params.emplace_back("arg" + std::to_string(positional++), part);
    }
    start = end + 1;
  }
}

}  // namespace

NativeResult gbench_case(const std::string& run_name) {
  NativeResult r;
  split_name(run_name, r);
  std::sort(r.params.begin(), r.params.end());
  return r;
}

namespace {

// The reporter's document: an object with a "context" object and a "benchmarks" array.
core::Result<json> gbench_root(std::string_view text) {
  auto parsed = core::parse_json_text(text);
  if (!parsed) {
    // The reporter writes NaN and Infinity bare, which JSON does not have.
    if (text.find(": NaN") != std::string_view::npos ||
        text.find("Infinity") != std::string_view::npos) {
      return core::fail(
          ErrorCode::ParseError,
          "Google Benchmark JSON with a NaN or infinite time (not a number JSON has)");
    }
    return core::fail(ErrorCode::ParseError,
                      "not Google Benchmark JSON: " + readable_line(parsed.error().message, 200));
  }
  const json& root = *parsed;
  if (!root.is_object() || !root.contains("benchmarks") || !root["benchmarks"].is_array() ||
      !root.contains("context") || !root["context"].is_object()) {
    return core::fail(ErrorCode::ParseError,
                      "not Google Benchmark JSON: expected an object with \"context\" and a "
                      "\"benchmarks\" array");
  }
  return std::move(*parsed);
}

// The library's version, the timer, and the machine facts of the context.
void read_context(const json& context, ParsedOutput& out) {
  if (const auto v = context.find("library_version"); v != context.end() && v->is_string()) {
    out.harness_version = v->get<std::string>();
    if (!out.harness_version.empty() && out.harness_version[0] == 'v') {
      out.harness_version.erase(0, 1);
    }
  }
  out.timer = "wall_clock";
  for (const char* field : {"host_name", "num_cpus", "library_build_type"}) {
    const auto v = context.find(field);
    if (v == context.end()) continue;
    const std::string text = v->is_string() ? v->get<std::string>() : v->dump();
    if (!text.empty()) out.environment.emplace_back(field, readable_line(text, 200));
  }
}

// What one row (with a name) adds to its benchmark's rows.
void gather_row(const json& row, Gathered& g) {
  if (row.value("error_occurred", false)) {
    g.error = row.value("error_message", std::string("error_occurred without a message"));
    return;
  }
  if (row.value("skipped", false)) {
    g.skipped = true;
    return;
  }
  if (!row.contains("real_time")) return;  // big-O and RMS rows
  if (!row["real_time"].is_number()) {
    g.unit_error = "real_time is not a number";
    return;
  }
  const std::string unit = row.value("time_unit", std::string());
  const auto scale = unit_ns(unit);
  if (!scale) {
    g.unit_error = "unknown time_unit \"" + readable_line(unit, 40) + "\" (ns, us, ms, s)";
    return;
  }
  const double real_ns = row["real_time"].get<double>() * *scale;
  const std::string type = row.value("run_type", std::string("iteration"));
  if (type == "aggregate") {
    if (row.value("aggregate_unit", std::string("time")) != "time") return;  // cv
    g.aggregates_ns[row.value("aggregate_name", std::string())] = real_ns;
    return;
  }
  g.repetitions_ns.push_back(real_ns);
  if (row.contains("cpu_time") && row["cpu_time"].is_number()) {
    g.cpu_ns.push_back(row["cpu_time"].get<double>() * *scale);
  }
  if (row.contains("iterations") && row["iterations"].is_number_integer()) {
    g.iterations = row["iterations"].get<std::int64_t>();
  }
  if (row.contains("threads") && row["threads"].is_number_integer()) {
    g.threads = row["threads"].get<std::int64_t>();
  }
  for (const auto& [key, value] : row.items()) {
    if (!is_row_key(key) && value.is_number()) g.counters[snake(key)] = value;
  }
}

// The times of a benchmark that ran: the median (the median aggregate, else of the repetitions,
// or the one repetition's mean), p20/p80, min/max, the mean and stddev aggregates, the counters.
void read_times(Gathered& g, NativeResult& r) {
  std::vector<double> sorted = g.repetitions_ns;
  std::sort(sorted.begin(), sorted.end());
  if (const auto median = g.aggregates_ns.find("median"); median != g.aggregates_ns.end()) {
    r.primary_ns = median->second;
  } else if (sorted.size() == 1) {
    r.primary = "mean";  // one repetition: its time is a mean over its iterations
    r.primary_ns = sorted.front();
  } else {
    r.primary_ns = kernels::quantile_sorted(sorted, 0.5);
  }
  if (sorted.size() >= 2) {
    r.statistics.push_back({"p20", kernels::quantile_sorted(sorted, 0.2)});
    r.statistics.push_back({"p80", kernels::quantile_sorted(sorted, 0.8)});
  }
  if (!sorted.empty()) {
    r.statistics.push_back({"min", sorted.front()});
    r.statistics.push_back({"max", sorted.back()});
  }
  if (const auto mean = g.aggregates_ns.find("mean"); mean != g.aggregates_ns.end()) {
    r.statistics.push_back({"mean", mean->second});
  }
  if (const auto sd = g.aggregates_ns.find("stddev"); sd != g.aggregates_ns.end()) {
    r.statistics.push_back({"stddev", sd->second});
  }
  r.samples = static_cast<std::int64_t>(sorted.size());
  r.samples_ns = g.repetitions_ns;
  r.metrics = g.counters;
  r.metrics["iterations"] = g.iterations;
  r.metrics["threads"] = g.threads;
  if (!g.cpu_ns.empty()) {
    std::sort(g.cpu_ns.begin(), g.cpu_ns.end());
    r.metrics["cpu_time_median_ns"] = kernels::quantile_sorted(g.cpu_ns, 0.5);
  }
  check_times(r);
}

// The result of one benchmark's rows: failed (its error, a bad time, no time at all) or timed.
NativeResult result_of(const std::string& run_name, Gathered& g) {
  NativeResult r = gbench_case(run_name);
  if (g.error) {
    r.outcome = NativeResult::Outcome::Failed;
    r.failure = "the benchmark reported an error: " + readable_line(*g.error, 300);
  } else if (!g.unit_error.empty()) {
    r.outcome = NativeResult::Outcome::Failed;
    r.failure = g.unit_error;
  } else if (g.repetitions_ns.empty() && !g.aggregates_ns.contains("median")) {
    r.outcome = NativeResult::Outcome::Failed;
    r.failure = "no repetition and no median aggregate";
  } else {
    read_times(g, r);
  }
  return r;
}

}  // namespace

core::Result<ParsedOutput> parse_gbench_json(std::string_view text) {
  const json root = KW_TRY(gbench_root(text));
  ParsedOutput out;
  read_context(root["context"], out);
  std::map<std::string, Gathered> by_name;
  std::size_t order = 0;
  for (const json& row : root["benchmarks"]) {
    if (!row.is_object() || !row.contains("name") || !row["name"].is_string()) {
      return core::fail(ErrorCode::ParseError,
                        "not Google Benchmark JSON: a benchmarks entry without a name");
    }
    const std::string run_name = row.value("run_name", row["name"].get<std::string>());
    auto [it, fresh] = by_name.try_emplace(run_name);
    if (fresh) it->second.order = order++;
    gather_row(row, it->second);
  }
  // In the order of each benchmark's first row.
  std::vector<std::pair<std::size_t, NativeResult>> ordered;
  for (auto& [run_name, g] : by_name) {
    if (g.skipped && !g.error && g.repetitions_ns.empty()) {
      ++out.skipped;
      continue;
    }
    ordered.emplace_back(g.order, result_of(run_name, g));
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [unused, r] : ordered) out.results.push_back(std::move(r));
  out.statistics_note =
      "real_time per iteration; median: the median aggregate of the repetitions (else the median "
      "of the repetition rows, or the one repetition's mean); p20/p80: linear interpolation over "
      "the repetition rows";
  return out;
}

}  // namespace kernelwatch::runners
