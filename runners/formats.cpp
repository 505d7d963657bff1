#include "runners/formats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/digest.hpp"
#include "core/json_limits.hpp"
#include "core/names.hpp"
#include "runners/child_process.hpp"
#include "storage/kernelindex_reader.hpp"

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;

constexpr std::size_t kMaxWorkloadLabel = 200;

std::string label_part(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') || c == '.';
    out += keep ? lower : '.';
  }
  return out.empty() ? std::string("none") : out;
}

std::string ms_text(double ns) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%g", ns);
  return buffer;
}

}  // namespace

std::string_view to_string(OutputFormat format) noexcept {
  switch (format) {
    case OutputFormat::KernelindexJsonl:
      return "kernelindex-jsonl";
    case OutputFormat::GbenchJson:
      return "gbench-json";
    case OutputFormat::NvbenchJson:
      return "nvbench-json";
    case OutputFormat::PytestBenchmarkJson:
      return "pytest-benchmark-json";
    case OutputFormat::LigerCsv:
      return "liger-csv";
  }
  return "?";
}

std::string_view harness_of(OutputFormat format) noexcept {
  switch (format) {
    case OutputFormat::KernelindexJsonl:
      return "kernelindex";
    case OutputFormat::GbenchJson:
      return "google-benchmark";
    case OutputFormat::NvbenchJson:
      return "nvbench";
    case OutputFormat::PytestBenchmarkJson:
      return "pytest-benchmark";
    case OutputFormat::LigerCsv:
      return "liger-kernel-benchmark";
  }
  return "?";
}

core::Result<OutputFormat> parse_output_format(std::string_view text) {
  return core::parse_name("output format", text, kOutputFormats);
}

void check_times(NativeResult& r) {
  if (r.outcome != NativeResult::Outcome::Timed) return;
  const auto fail = [&](std::string why) {
    r.outcome = NativeResult::Outcome::Failed;
    r.failure = std::move(why);
  };
  const auto storable = [](double ns) {
    return std::isfinite(ns) && ns >= 0.5 && ns <= static_cast<double>(core::kMaxLatencyNs);
  };
  if (!storable(r.primary_ns)) {
    return fail("NaN, infinite, negative or zero time (or over 2^53 ns): " + r.primary + " " +
                ms_text(r.primary_ns) + " ns");
  }
  for (const auto& s : r.statistics) {
    if (s.name == "stddev") {
      if (!std::isfinite(s.ns) || s.ns < 0) return fail("NaN or negative stddev " + ms_text(s.ns));
      continue;
    }
    if (!storable(s.ns)) {
      return fail("NaN, infinite, negative or zero time (or over 2^53 ns): " + s.name + " " +
                  ms_text(s.ns) + " ns");
    }
  }
  const auto find = [&](std::string_view name) -> std::optional<double> {
    for (const auto& s : r.statistics) {
      if (s.name == name) return s.ns;
    }
    return std::nullopt;
  };
  const auto p20 = find("p20");
  const auto p80 = find("p80");
  if (r.primary == "median" && ((p20 && *p20 > r.primary_ns) || (p80 && *p80 < r.primary_ns) ||
                                (p20 && p80 && *p20 > *p80))) {
    return fail("quantiles out of order: p20=" + ms_text(p20.value_or(NAN)) +
                " median=" + ms_text(r.primary_ns) + " p80=" + ms_text(p80.value_or(NAN)) +
                " ns (p20 <= median <= p80 expected)");
  }
}

std::string workload_label(const std::vector<std::pair<std::string, std::string>>& params) {
  if (params.empty()) return "default";
  std::string out;
  for (const auto& [name, value] : params) {
    out += (out.empty() ? "" : "-") + label_part(name) + "_" + label_part(value);
  }
  if (out.size() <= kMaxWorkloadLabel) return out;
  // Cut, and made unique again by a digest of the whole label.
  const std::string digest = core::digest_of(nlohmann::json(out)).substr(7, 16);
  return out.substr(0, kMaxWorkloadLabel - digest.size() - 1) + "." + digest;
}

core::Result<ParsedOutput> parse_output(OutputFormat format, std::string_view text) {
  switch (format) {
    case OutputFormat::GbenchJson:
      return parse_gbench_json(text);
    case OutputFormat::NvbenchJson:
      return parse_nvbench_json(text);
    case OutputFormat::PytestBenchmarkJson:
      return parse_pytest_benchmark_json(text);
    case OutputFormat::LigerCsv:
      return parse_liger_csv_output(text);
    case OutputFormat::KernelindexJsonl:
      break;
  }
  return core::fail(ErrorCode::InvalidArgument, "kernelindex-jsonl output holds records");
}

core::Result<std::vector<core::Record>> parse_kernelindex_lines(std::string_view text) {
  std::vector<std::pair<std::size_t, std::string_view>> lines;
  bool prefixed = false;
  std::size_t number = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    if (line.substr(0, kKernelindexLinePrefix.size()) == kKernelindexLinePrefix) {
      if (!prefixed) lines.clear();
      prefixed = true;
      lines.emplace_back(number, line.substr(kKernelindexLinePrefix.size()));
    } else if (!prefixed && !line.empty() && line.front() == '{') {
      lines.emplace_back(number, line);
    }
    start = end + 1;
  }
  std::vector<core::Record> out;
  for (const auto& [line_number, line] : lines) {
    const std::string where = "line " + std::to_string(line_number);
    auto parsed = core::parse_json_text(line);
    if (!parsed) {
      return core::fail(ErrorCode::ParseError, "not kernelindex JSON Lines: " + where + ": " +
                                                   parsed.error().message + ": " +
                                                   readable_line(line, 80));
    }
    auto items = storage::read_kernelindex(line);
    if (items.size() != 1 || items[0].kind != storage::ItemKind::Run) {
      const std::string why = items.empty() ? "no record" : items[0].reason;
      return core::fail(ErrorCode::ParseError,
                        "not a kernelindex record: " + where + ": " + readable_line(why, 300));
    }
    out.push_back(std::move(items[0].record));
  }
  if (out.empty()) {
    return core::fail(ErrorCode::ParseError,
                      "no kernelindex record in the output (a JSON object per line, or lines "
                      "prefixed \"KERNELINDEX_RUN: \")");
  }
  return out;
}

}  // namespace kernelwatch::runners
