#include "runners/compare_input.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/json_limits.hpp"
#include "core/key.hpp"
#include "detectors/statistics.hpp"
#include "runners/child_process.hpp"

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;
using nlohmann::json;

std::string_view trim_front(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' ||
                           text.front() == '\r')) {
    text.remove_prefix(1);
  }
  return text;
}

std::string_view first_line(std::string_view text) {
  return text.substr(0, std::min(text.find('\n'), text.size()));
}

// The harness's own full id where it has one (pytest's node id), else "BM_Saxpy/4096/threads:2"
// as Google Benchmark names it (positional arguments by value, named ones as name:value), and
// "copy[Elements=1048576]" for the other formats.
std::string case_id(OutputFormat format, const NativeResult& r) {
  if (!r.native_id.empty()) return r.native_id + (r.provider.empty() ? "" : " " + r.provider);
  std::string id = r.name;
  if (format == OutputFormat::GbenchJson) {
    for (const auto& [name, value] : r.params) {
      const bool positional =
          name.size() > 3 && name.substr(0, 3) == "arg" &&
          std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; });
      id += "/" + (positional ? value : name + ":" + value);
    }
    for (const auto& setting : r.settings) id += "/" + setting;  // "BM_X/real_time" is its own
  } else if (!r.workload.empty()) {
    id += " " + r.workload;
  } else if (!r.params.empty()) {
    id += "[";
    for (std::size_t i = 0; i < r.params.size(); ++i) {
      id += (i ? "," : "") + r.params[i].first + "=" + r.params[i].second;
    }
    id += "]";
  }
  if (!r.provider.empty()) id += " " + r.provider;
  return id;
}

std::optional<double> statistic(const NativeResult& r, std::string_view name) {
  for (const auto& s : r.statistics) {
    if (s.name == name) return s.ns;
  }
  return std::nullopt;
}

CompareCase case_of(OutputFormat format, const NativeResult& r,
                    const std::vector<std::pair<std::string, std::string>>& environment) {
  CompareCase c;
  c.id = case_id(format, r);
  c.environment = environment;
  if (!r.device.empty()) c.environment.emplace_back("device", r.device);
  if (r.outcome == NativeResult::Outcome::Failed) {
    c.failure = r.failure;
    return c;
  }
  c.times.median_ns = r.primary_ns;
  c.times.p20_ns = statistic(r, "p20");
  c.times.p80_ns = statistic(r, "p80");
  c.times.q1_ns = statistic(r, "q1");
  c.times.q3_ns = statistic(r, "q3");
  c.times.stddev_ns = statistic(r, "stddev");
  c.times.mean_ns = statistic(r, "mean");
  c.times.count = r.samples;
  // A repetition time of zero (a coarse timer) or worse says nothing of the case: left out.
  for (const double ns : r.samples_ns) {
    if (std::isfinite(ns) && ns > 0) c.times.samples_ns.push_back(ns);
  }
  return c;
}

core::Result<CompareCase> case_of(const core::Record& record, std::size_t index) {
  const auto key = core::key_of(record);
  if (!key) {
    return core::fail(ErrorCode::ParseError,
                      "record " + std::to_string(index + 1) + ": " + key.error().message);
  }
  CompareCase c;
  c.id = key->benchmark.label + " " + key->provider.label + " " + key->workload.label;
  c.environment = {{"environment", key->environment.label}, {"protocol", key->protocol.label}};
  if (record.run.outcome() != core::RunOutcome::Passed || !record.run.median) {
    c.failure = std::string(core::to_string(record.run.status)) +
                (record.run.status_reason.empty() ? "" : ": " + record.run.status_reason);
    return c;
  }
  const auto ns = [](std::optional<std::chrono::nanoseconds> v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(v->count());
  };
  c.times.median_ns = static_cast<double>(record.run.median->count());
  c.times.p20_ns = ns(record.run.latency("p20"));
  c.times.p80_ns = ns(record.run.latency("p80"));
  c.times.q1_ns = ns(record.run.latency("q1"));
  c.times.q3_ns = ns(record.run.latency("q3"));
  c.times.stddev_ns = ns(record.run.latency("stddev"));
  c.times.mean_ns = ns(record.run.latency("mean"));
  const json* spec = record.run.document.is_object() && record.run.document.contains("spec")
                         ? &record.run.document["spec"]
                         : nullptr;
  if (spec != nullptr && spec->is_object() && spec->contains("timing") &&
      (*spec)["timing"].is_object() && (*spec)["timing"].contains("samples") &&
      (*spec)["timing"]["samples"].is_number_integer()) {
    c.times.count = std::max<std::int64_t>(0, (*spec)["timing"]["samples"].get<std::int64_t>());
  }
  return c;
}

// Cases of one id in one file: their medians become the samples of one case (runs of it). A run
// that failed makes the case failed whatever the order; runs of one id from two environments are
// never pooled (the case says so, and compare refuses it).
std::vector<CompareCase> merge_repeats(std::vector<CompareCase> cases) {
  std::vector<CompareCase> out;
  std::map<std::string, std::size_t> at;
  std::map<std::size_t, std::vector<double>> medians;
  for (auto& c : cases) {
    const auto [it, fresh] = at.try_emplace(c.id, out.size());
    if (fresh) {
      if (c.failure.empty()) medians[out.size()].push_back(c.times.median_ns);
      out.push_back(std::move(c));
      continue;
    }
    CompareCase& first = out[it->second];
    ++first.occurrences;
    if (c.environment != first.environment && first.mixed_environments.empty()) {
      for (const auto& field : c.environment) {
        if (std::find(first.environment.begin(), first.environment.end(), field) ==
            first.environment.end()) {
          first.mixed_environments = field.first + " \"" + readable_line(field.second, 80) + "\"";
          break;
        }
      }
      if (first.mixed_environments.empty()) first.mixed_environments = "a different environment";
    }
    if (c.failure.empty()) {
      medians[it->second].push_back(c.times.median_ns);
    } else if (first.failure.empty()) {
      first.failure = c.failure;
    }
  }
  for (auto& [index, values] : medians) {
    CompareCase& c = out[index];
    if (c.occurrences < 2) continue;
    if (!c.failure.empty()) continue;  // a failed run of it: the case failed
    if (values.size() < 2) continue;
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    detectors::CaseTimes t;
    t.median_ns = detectors::quantile(sorted, 0.5);
    t.p20_ns = detectors::quantile(sorted, 0.2);
    t.p80_ns = detectors::quantile(sorted, 0.8);
    t.count = static_cast<std::int64_t>(values.size());
    t.samples_ns = std::move(values);
    c.times = std::move(t);
  }
  return out;
}

}  // namespace

core::Result<OutputFormat> recognise_format(std::string_view text) {
  const std::string_view body = trim_front(text);
  const std::string_view header = first_line(body);
  if (header.find("kernel_name") != std::string_view::npos &&
      header.find("y_value_50") != std::string_view::npos) {
    return OutputFormat::LigerCsv;
  }
  if (text.find(kKernelindexLinePrefix) != std::string_view::npos) {
    return OutputFormat::KernelindexJsonl;
  }
  if (!body.empty() && body.front() == '{') {
    if (auto whole = core::parse_json_text(body); whole && whole->is_object()) {
      const json& root = *whole;
      if (root.contains("benchmarks")) {
        if (root.contains("context")) return OutputFormat::GbenchJson;
        if (root.contains("machine_info")) return OutputFormat::PytestBenchmarkJson;
        if (root.contains("devices") || root.contains("meta")) return OutputFormat::NvbenchJson;
      }
      if (root.contains("run")) return OutputFormat::KernelindexJsonl;
    } else if (auto line = core::parse_json_text(header);
               line && line->is_object() && line->contains("run")) {
      return OutputFormat::KernelindexJsonl;
    }
  }
  return core::fail(ErrorCode::ParseError,
                    "not a result file compare reads (Google Benchmark, nvbench or "
                    "pytest-benchmark JSON, kernelindex JSON Lines, Liger-Kernel benchmark CSV); "
                    "if it is one, give --format");
}

core::Result<CompareInput> read_compare_input(std::string_view text,
                                              std::optional<OutputFormat> format) {
  if (trim_front(text).empty()) return core::fail(ErrorCode::ParseError, "the file is empty");
  CompareInput in;
  in.format = format ? *format : KW_TRY(recognise_format(text));
  std::vector<CompareCase> cases;
  if (in.format == OutputFormat::KernelindexJsonl) {
    const auto records = KW_TRY(parse_kernelindex_lines(text));
    for (std::size_t i = 0; i < records.size(); ++i) {
      cases.push_back(KW_TRY(case_of(records[i], i)));
    }
    in.statistics_note = "kernelindex records: median, p20/p80 and the sample count each gives";
  } else {
    const ParsedOutput parsed = KW_TRY(parse_output(in.format, text));
    in.harness_version = parsed.harness_version;
    in.statistics_note = parsed.statistics_note;
    in.skipped = parsed.skipped;
    for (const auto& r : parsed.results) cases.push_back(case_of(in.format, r, parsed.environment));
  }
  if (cases.empty()) {
    return core::fail(ErrorCode::ParseError,
                      std::string("no benchmark case in this ") +
                          std::string(to_string(in.format)) + " output" +
                          (in.skipped > 0 ? " (" + std::to_string(in.skipped) + " skipped)" : ""));
  }
  in.cases = merge_repeats(std::move(cases));
  return in;
}

}  // namespace kernelwatch::runners
