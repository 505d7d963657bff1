// compare's report in its four forms: a terminal table, a pull-request comment in Markdown, JSON
// for tools and JUnit XML for CI test reports.
#include <cmath>
#include <cstdio>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/json_limits.hpp"
#include "core/time.hpp"
#include "daemon/compare_command.hpp"
#include "daemon/format.hpp"
#include "web/html.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

using detectors::plain_percent;
std::string percent(double ratio_minus_one) {
  return detectors::signed_percent(ratio_minus_one);
}

// Text from a result file for a terminal: valid UTF-8, control characters (an escape sequence)
// as spaces.
std::string text(std::string_view s, std::size_t max = 200) {
  std::string out = core::utf8_prefix(s, max);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

bool timed(const CompareRow& row) {
  return row.comparison.has_value();
}

std::string median_cell(const detectors::CaseTimes& t, bool has) {
  return has ? core::format_latency(t.median_ns) : "-";
}

std::string change_cell(const CompareRow& row) {
  return timed(row) ? percent(row.comparison->change) : "-";
}

std::string interval_cell(const CompareRow& row) {
  if (!timed(row) || !row.comparison->low) return "-";
  return "[" + percent(*row.comparison->low) + ", " + percent(*row.comparison->high) + "]";
}

std::string method_cell(const CompareRow& row) {
  if (!timed(row)) return "-";
  const auto& c = *row.comparison;
  std::string m(detectors::to_string(c.method));
  if (c.method == detectors::CompareMethod::Samples ||
      c.method == detectors::CompareMethod::Rounds) {
    m += " " + std::to_string(c.base_count) + "/" + std::to_string(c.candidate_count);
  }
  return m;
}

bool moved(const CompareRow& row) {
  return row.verdict != "same";
}

std::string summary_line(const CompareReport& r) {
  std::string line;
  const auto add = [&](std::size_t n, const char* what) {
    if (n == 0) return;
    line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(r.count("slower"), "slower");
  add(r.count("failed"), "failed");
  add(r.count("faster"), "faster");
  add(r.count("ambiguous"), "ambiguous");
  add(r.count("same"), "same");
  add(r.count("refused"), "refused (environments differ)");
  add(r.count("baseline failed"), "not compared (baseline failed)");
  if (!r.basis.empty()) {
    return line + " of " + std::to_string(r.rows.size()) + " cases (against " + r.basis + ")";
  }
  return line + " of " + std::to_string(r.rows.size()) + " cases (threshold " +
         plain_percent(r.threshold) + ", " + plain_percent(r.confidence) + " intervals)";
}

void print_table_form(const CompareReport& r, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : r.rows) {
    rows.push_back({text(row.id, 120), median_cell(row.baseline, timed(row)),
                    median_cell(row.candidate, timed(row)), change_cell(row), interval_cell(row),
                    row.verdict, method_cell(row)});
  }
  print_table(out, {"case", "baseline", "candidate", "change", "interval", "verdict", "method"},
              rows);
  bool noted = false;
  for (const auto& row : r.rows) {
    if (!moved(row)) continue;
    if (!noted) out << '\n';
    noted = true;
    out << text(row.id, 120) << ": " << text(row.reason, 400) << '\n';
  }
  for (const auto& id : r.only_in_baseline) out << "only in the baseline: " << text(id) << '\n';
  for (const auto& id : r.only_in_candidate) out << "only in the candidate: " << text(id) << '\n';
  out << '\n' << summary_line(r) << '\n';
}

// Markdown table cells: no pipes or line breaks, code spans for ids.
std::string cell(std::string_view s) {
  std::string out;
  for (const char c : text(s, 200)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '<') {
      out += "&lt;";  // no HTML from a result file in a bot's comment
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '[' || c == ']' || c == '@' || c == '*' || c == '_') {
      out += '\\';
      out += c;  // no links, mentions or emphasis either
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '`') {
      out += '\'';
    } else {
      out += c;
    }
  }
  return out;
}

// The inside of a code span (ids, paths): literal in Markdown, so only what would end the span or
// the table cell is changed.
std::string code(std::string_view s) {
  std::string out;
  for (const char c : text(s, 200)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '`') {
      out += '\'';
    } else {
      out += c;
    }
  }
  return out;
}

void markdown_rows(const CompareReport& r, bool moved_rows, std::ostream& out) {
  out << "| case | baseline | candidate | change | interval | verdict |\n"
         "|---|---:|---:|---:|---|---|\n";
  for (const auto& row : r.rows) {
    if (moved(row) != moved_rows) continue;
    const std::string mark = row.verdict == "slower" || row.verdict == "failed" ? "**" : "";
    out << "| `" << code(row.id) << "` | " << median_cell(row.baseline, timed(row)) << " | "
        << median_cell(row.candidate, timed(row)) << " | " << change_cell(row) << " | "
        << interval_cell(row) << " | " << mark << row.verdict << mark << " |\n";
  }
}

void print_markdown(const CompareReport& r, std::ostream& out) {
  const std::size_t moved_count =
      static_cast<std::size_t>(std::count_if(r.rows.begin(), r.rows.end(), moved));
  const char* head = r.count("slower") + r.count("failed") > 0 ? ":red_circle:"
                     : r.count("refused") > 0                  ? ":no_entry:"
                     : moved_count > 0                         ? ":yellow_circle:"
                                                               : ":green_circle:";
  out << "### " << head << " kernelwatch compare: " << summary_line(r) << "\n\n";
  if (moved_count == 0) {
    out << "No case moved beyond its threshold.\n\n";
  } else {
    markdown_rows(r, true, out);
    out << '\n';
    for (const auto& row : r.rows) {
      if (moved(row)) out << "- `" << code(row.id) << "`: " << cell(row.reason) << '\n';
    }
    out << '\n';
  }
  if (moved_count < r.rows.size()) {
    out << "<details><summary>" << r.rows.size() - moved_count << " unchanged cases</summary>\n\n";
    markdown_rows(r, false, out);
    out << "\n</details>\n\n";
  }
  if (!r.only_in_baseline.empty() || !r.only_in_candidate.empty()) {
    out << "<details><summary>cases in one file only</summary>\n\n";
    for (const auto& id : r.only_in_baseline)
      out << "- only in the baseline: `" << code(id) << "`\n";
    for (const auto& id : r.only_in_candidate) {
      out << "- only in the candidate: `" << code(id) << "`\n";
    }
    out << "\n</details>\n\n";
  }
  out << "<sub>baseline `" << code(r.baseline_name) << "`, candidate `" << code(r.candidate_name)
      << "` (" << r.format << "); how it decides: docs/CI.md</sub>\n";
}

json side_json(const detectors::CaseTimes& t) {
  json j = {{"median_ns", t.median_ns}};
  if (t.p20_ns) j["p20_ns"] = *t.p20_ns;
  if (t.p80_ns) j["p80_ns"] = *t.p80_ns;
  if (t.count > 0) j["count"] = t.count;
  j["samples"] = t.samples_ns.size();
  return j;
}

void print_json(const CompareReport& r, std::ostream& out) {
  json cases = json::array();
  for (const auto& row : r.rows) {
    json c = {{"id", row.id},
              {"verdict", row.verdict},
              {"threshold", row.threshold},
              {"reason", row.reason}};
    if (timed(row)) {
      const auto& cmp = *row.comparison;
      c["baseline"] = side_json(row.baseline);
      c["candidate"] = side_json(row.candidate);
      c["change"] = cmp.change;
      c["low"] = cmp.low ? json(*cmp.low) : json();
      c["high"] = cmp.high ? json(*cmp.high) : json();
      c["method"] = std::string(detectors::to_string(cmp.method));
    }
    cases.push_back(std::move(c));
  }
  json summary = json::object();
  for (const char* v :
       {"same", "faster", "slower", "ambiguous", "failed", "refused", "baseline failed"}) {
    summary[v] = r.count(v);
  }
  const json doc = {{"baseline", r.baseline_name},
                    {"candidate", r.candidate_name},
                    {"format", r.format},
                    {"threshold", r.threshold},
                    {"confidence", r.confidence},
                    {"summary", summary},
                    {"cases", cases},
                    {"only_in_baseline", r.only_in_baseline},
                    {"only_in_candidate", r.only_in_candidate},
                    {"exit_code", r.exit_code}};
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

// XML text and attribute values: HTML's five escapes (web::escape), control characters dropped
// (XML 1.0 has no form for them), invalid UTF-8 replaced.
std::string xml(std::string_view s) {
  std::string kept;
  for (const char c : core::utf8_prefix(s, 1000)) {
    if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') kept += c;
  }
  return web::escape(kept);
}

void print_junit(const CompareReport& r, std::ostream& out) {
  const std::size_t failures = r.count("slower") + r.count("failed");
  const std::size_t skipped = r.rows.size() - failures - r.count("same") - r.count("faster");
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"kernelwatch compare\" tests=\"" << r.rows.size() << "\" failures=\""
      << failures << "\">\n"
      << "  <testsuite name=\"" << xml(r.candidate_name) << " against " << xml(r.baseline_name)
      << "\" tests=\"" << r.rows.size() << "\" failures=\"" << failures << "\" skipped=\""
      << skipped << "\">\n";
  for (const auto& row : r.rows) {
    out << "    <testcase classname=\"kernelwatch.compare\" name=\"" << xml(row.id) << "\"";
    if (timed(row)) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.9f", row.candidate.median_ns * 1e-9);
      out << " time=\"" << seconds << "\"";
    }
    out << ">\n";
    if (row.verdict == "slower" || row.verdict == "failed") {
      out << "      <failure type=\"" << row.verdict << "\" message=\"" << xml(row.reason)
          << "\"/>\n";
    } else if (row.verdict != "same" && row.verdict != "faster") {
      out << "      <skipped message=\"" << xml(row.verdict + ": " + row.reason) << "\"/>\n";
    }
    out << "      <system-out>" << xml(row.verdict + ": " + row.reason) << "</system-out>\n"
        << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

}  // namespace

void print_compare_report(const CompareReport& report, CompareFormat format, std::ostream& out) {
  switch (format) {
    case CompareFormat::Table:
      return print_table_form(report, out);
    case CompareFormat::Markdown:
      return print_markdown(report, out);
    case CompareFormat::Json:
      return print_json(report, out);
    case CompareFormat::Junit:
      return print_junit(report, out);
  }
}

}  // namespace kernelwatch::daemon
