#include "web/pages.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/digest.hpp"
#include "web/html.hpp"

#ifndef KERNELWATCH_VERSION
#define KERNELWATCH_VERSION "0.0.0-dev"
#endif

namespace kernelwatch::web {
namespace {

using core::ErrorCode;
using std::chrono::nanoseconds;

// ---- small helpers ----

std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string latency(std::optional<nanoseconds> value) {
  return value ? escape(core::format_latency(*value)) : std::string("&ndash;");
}

std::string root(LinkMode mode, int depth) {
  if (mode == LinkMode::Served) return "/";
  std::string out;
  for (int i = 0; i < depth; ++i) out += "../";
  return out;
}

std::string head(std::string_view title, LinkMode mode, int depth) {
  const std::string r = root(mode, depth);
  std::string html;
  html.reserve(64 * 1024);
  html +=
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<link rel=\"icon\" href=\"data:,\">"
      "<title>" +
      escape(title) + " - kernelwatch</title><link rel=\"stylesheet\" href=\"" + escape(r) +
      "assets/kw.css\"><script src=\"" + escape(r) +
      "assets/kw.js\" defer></script></head><body><header class=\"top\"><a class=\"brand\" "
      "href=\"" +
      escape(mode == LinkMode::Served ? r : r + "index.html") +
      "\">kernelwatch</a><span class=\"sub\">benchmark history and alerts</span></header><main>";
  return html;
}

std::string foot(LinkMode mode) {
  return std::string("</main><footer>kernelwatch ") + KERNELWATCH_VERSION +
         (mode == LinkMode::Static ? " &middot; static report" : "") +
         "</footer><div id=\"tip\" class=\"tip\" role=\"tooltip\" hidden></div></body></html>\n";
}

// State labels carry a symbol and a word: readable without colour.
std::string state_badge(KeyState state) {
  const char* symbol = "";
  const char* word = "";
  switch (state) {
    case KeyState::Firing:
      symbol = "&#9650;";
      word = "firing";
      break;
    case KeyState::Acknowledged:
      symbol = "&#10003;";
      word = "acknowledged";
      break;
    case KeyState::Failing:
      symbol = "&#10007;";
      word = "failing";
      break;
    case KeyState::Breached:
      symbol = "?";
      word = "breached, unconfirmed";
      break;
    case KeyState::InsufficientData:
      symbol = "&#8230;";
      word = "insufficient data";
      break;
    case KeyState::InBand:
      symbol = "&#9679;";
      word = "in band";
      break;
  }
  return std::string("<span class=\"badge st-") + std::string(to_string(state)) + "\">" + symbol +
         " " + word + "</span>";
}

std::string alert_state_badge(core::AlertState state) {
  const std::string name(core::to_string(state));
  const char* symbol = state == core::AlertState::Firing         ? "&#9650;"
                       : state == core::AlertState::Acknowledged ? "&#10003;"
                       : state == core::AlertState::Resolved     ? "&#9679;"
                                                                 : "&#8634;";
  return "<span class=\"badge as-" + escape(name) + "\">" + symbol + " " + escape(name) + "</span>";
}

std::string direction_word(core::Direction d) {
  return d == core::Direction::Regression ? "&#9650; regression (slower)"
                                          : "&#9660; improvement (faster)";
}

std::string band_text(const core::Band& band) {
  return "[" + escape(core::format_latency(band.lower)) + ", " +
         escape(core::format_latency(band.upper)) + "]";
}

core::Result<std::size_t> parse_count(const std::string& name, const std::string& text,
                                      std::size_t low, std::size_t high) {
  std::size_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < low ||
      value > high) {
    return core::fail(
        ErrorCode::InvalidArgument,
        name + " must be an integer from " + std::to_string(low) + " to " + std::to_string(high));
  }
  return value;
}

core::Result<void> only_known(const Query& query, std::initializer_list<std::string_view> names) {
  for (const auto& [name, value] : query) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return core::fail(ErrorCode::InvalidArgument, "unknown query parameter \"" + name + "\"");
    }
  }
  return {};
}

// A date (YYYY-MM-DD, the day's start in UTC) or an RFC 3339 instant.
core::Result<core::Timestamp> parse_day_or_time(const std::string& name, const std::string& text,
                                                bool end_of_day) {
  if (text.size() == 10) {
    auto day = core::parse_timestamp(text + "T00:00:00Z");
    if (day) return end_of_day ? *day + std::chrono::hours(24) : *day;
  } else if (auto t = core::parse_timestamp(text)) {
    return *t;
  }
  return core::fail(ErrorCode::InvalidArgument,
                    name + " must be a date like 2025-03-04 or an RFC 3339 time");
}

}  // namespace

// ---- links ----

std::string key_file(std::string_view ref, Scale scale) {
  return "keys/" + std::string(ref) + (scale == Scale::Log ? "-log" : "") + ".html";
}

std::string alert_file(std::string_view alert_id) {
  return "alerts/" + core::sha256_hex(alert_id).substr(0, 16) + ".html";
}

std::string overview_file(std::size_t page) {
  return page <= 1 ? "index.html" : "index-" + std::to_string(page) + ".html";
}

std::string key_href(std::string_view ref, LinkMode mode, int depth, Scale scale) {
  if (mode == LinkMode::Served)
    return "/keys/" + std::string(ref) + (scale == Scale::Log ? "?scale=log" : "");
  return root(mode, depth) + key_file(ref, scale);
}

std::string alert_href(std::string_view alert_id, LinkMode mode, int depth) {
  if (mode == LinkMode::Served) return "/alerts/" + url_component(alert_id);
  return root(mode, depth) + alert_file(alert_id);
}

// ---- overview ----

core::Result<OverviewQuery> parse_overview_query(const Query& query) {
  KW_TRY(only_known(query, {"environment", "benchmark", "provider", "state", "page"}));
  OverviewQuery out;
  const auto get = [&](const char* name) {
    const auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  };
  out.environment = get("environment");
  out.benchmark = get("benchmark");
  out.provider = get("provider");
  if (const auto state = get("state"); !state.empty()) {
    out.state = parse_key_state(state);
    if (!out.state) {
      return core::fail(ErrorCode::InvalidArgument,
                        "state must be one of firing, acknowledged, failing, breached, "
                        "insufficient_data, in_band");
    }
  }
  if (query.count("page") != 0) out.page = KW_TRY(parse_count("page", get("page"), 1, 1000000));
  return out;
}

namespace {

std::string sparkline(const std::vector<std::int64_t>& points) {
  if (points.size() < 2) return "<span class=\"muted\">&ndash;</span>";
  const auto [lo_it, hi_it] = std::minmax_element(points.begin(), points.end());
  const double lo = static_cast<double>(*lo_it);
  const double hi = static_cast<double>(*hi_it);
  const double span = hi > lo ? hi - lo : 1;
  std::string out =
      "<svg class=\"spark\" viewBox=\"0 0 80 20\" aria-hidden=\"true\"><polyline points=\"";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double x = 80.0 * static_cast<double>(i) / static_cast<double>(points.size() - 1);
    const double y = 18 - 16 * (static_cast<double>(points[i]) - lo) / span;
    out += num(x) + "," + num(y) + " ";
  }
  out += "\"/></svg>";
  return out;
}

std::string key_cells(const KeyRow& row, LinkMode mode) {
  std::string html = "<td><a href=\"" + escape(key_href(key_ref(row.key), mode, 0)) + "\">" +
                     escape(row.key.provider) + " <span class=\"wl\">" + escape(row.key.workload) +
                     "</span></a></td><td>" + state_badge(row.state);
  if (!row.alert_id.empty()) {
    html += " <a class=\"alert-link\" href=\"" + escape(alert_href(row.alert_id, mode, 0)) +
            "\">alert</a>";
  }
  html += "</td><td class=\"num\">" +
          (row.last_run && row.last_run->median.count() > 0
               ? escape(core::format_latency(row.last_run->median))
               : std::string("&ndash;")) +
          "</td><td class=\"num\">";
  if (row.verdict.has_band) {
    html += escape(format_percent(row.verdict.relative_change)) + " <span class=\"muted\">vs " +
            band_text(row.verdict.band) + "</span>";
  } else {
    html += "<span class=\"muted\">no band yet</span>";
  }
  html += "</td><td>" + sparkline(row.spark) + "</td><td class=\"num\">" +
          std::to_string(row.run_count) + "</td><td>" +
          (row.last_run ? escape(format_time(row.last_run->observed_at)) : std::string()) + "</td>";
  return html;
}

constexpr const char* kKeyTableHead =
    "<thead><tr><th>provider / workload</th><th>state</th><th>last median</th><th>change vs "
    "band</th><th>recent</th><th>runs</th><th>last run</th></tr></thead>";

std::string select(const char* name, const char* label, const std::set<std::string>& values,
                   const std::string& chosen) {
  std::string html = std::string("<label>") + label + " <select name=\"" + name +
                     "\"><option value=\"\">all</option>";
  for (const auto& v : values) {
    html += "<option value=\"" + escape(v) + "\"" + (v == chosen ? " selected" : "") + ">" +
            escape(v) + "</option>";
  }
  return html + "</select></label> ";
}

std::string overview_page_href(const OverviewQuery& q, std::size_t page, LinkMode mode) {
  if (mode == LinkMode::Static) return overview_file(page);
  std::string href = "/?";
  if (!q.environment.empty()) href += "environment=" + url_component(q.environment) + "&";
  if (!q.benchmark.empty()) href += "benchmark=" + url_component(q.benchmark) + "&";
  if (!q.provider.empty()) href += "provider=" + url_component(q.provider) + "&";
  if (q.state) href += "state=" + std::string(to_string(*q.state)) + "&";
  return href + "page=" + std::to_string(page);
}

std::string status_box(const DaemonStatus& s) {
  std::string html = "<section class=\"status\" aria-label=\"daemon status\"><h2>Daemon</h2><dl>";
  html += "<dt>version</dt><dd>" + escape(s.version) + "</dd><dt>backend</dt><dd>" +
          escape(s.backend) + "</dd>";
  html += "<dt>last cycle</dt><dd>" +
          (s.cycle_running    ? std::string("running now")
           : s.last_cycle_end ? escape(format_time(*s.last_cycle_end))
                              : std::string("none yet")) +
          " <span class=\"muted\">(" + std::to_string(s.cycles) + " cycles, " +
          std::to_string(s.cycle_errors) + " errors)</span></dd>";
  html += "<dt>next cycle</dt><dd>" +
          (s.next_cycle ? escape(format_time(*s.next_cycle))
                        : std::string("none scheduled (no benchmarks configured)")) +
          "</dd><dt>outbox</dt><dd>";
  if (s.outbox.empty()) html += "empty";
  for (const auto& d : s.outbox) {
    html += "<span class=\"dest\">" + escape(d.destination) + ": " + std::to_string(d.pending) +
            " pending, " + std::to_string(d.delivered) + " delivered, " + std::to_string(d.dead) +
            " dead</span> ";
  }
  html += "</dd><dt>dead letters</dt><dd>" + std::to_string(s.dead_letters) + "</dd></dl>";
  if (!s.entries.empty()) {
    html +=
        "<table class=\"entries\"><caption>Entries</caption><thead><tr><th>entry</th>"
        "<th>runner</th><th>last run</th><th>next run</th><th>last error</th></tr></thead>"
        "<tbody>";
    for (const auto& e : s.entries) {
      html += "<tr><td>" + escape(e.name) + "</td><td>" + escape(e.runner) + "</td><td>" +
              (e.last_run ? escape(format_time(*e.last_run)) : std::string("not yet")) +
              "</td><td>" + (e.next_run ? escape(format_time(*e.next_run)) : std::string("-")) +
              "</td><td>" + (e.last_error.empty() ? std::string("none") : escape(e.last_error)) +
              "</td></tr>";
    }
    html += "</tbody></table>";
  }
  return html + "</section>";
}

bool open_first(const KeyRow& a, const KeyRow& b) {
  const auto rank = [](KeyState s) { return static_cast<int>(s); };
  if (rank(a.state) != rank(b.state)) return rank(a.state) < rank(b.state);
  return a.key.display() < b.key.display();
}

}  // namespace

std::string render_overview(const std::vector<KeyRow>& rows, const OverviewQuery& query,
                            const DaemonStatus* status, LinkMode mode) {
  std::set<std::string> environments;
  std::set<std::string> benchmarks;
  std::set<std::string> providers;
  std::vector<const KeyRow*> shown;
  for (const auto& row : rows) {
    environments.insert(row.key.environment);
    benchmarks.insert(row.key.benchmark);
    providers.insert(row.key.provider);
    if ((query.environment.empty() || row.key.environment == query.environment) &&
        (query.benchmark.empty() || row.key.benchmark == query.benchmark) &&
        (query.provider.empty() || row.key.provider == query.provider) &&
        (!query.state || row.state == *query.state)) {
      shown.push_back(&row);
    }
  }
  std::string html = head("overview", mode, 0);
  html += "<h1>Overview</h1><div class=\"overview-top\">";
  if (status != nullptr) html += status_box(*status);
  std::size_t firing = 0;
  for (const auto& row : rows) firing += row.alert_id.empty() ? 0 : 1;
  html += "<section class=\"counts\"><p><strong>" + std::to_string(rows.size()) +
          "</strong> keys, <strong>" + std::to_string(firing) + "</strong> with an open alert.</p>";
  if (mode == LinkMode::Served) {
    html += "<form class=\"filters\" method=\"get\" action=\"/\">" +
            select("environment", "environment", environments, query.environment) +
            select("benchmark", "benchmark", benchmarks, query.benchmark) +
            select("provider", "provider", providers, query.provider);
    std::set<std::string> states;
    html += "<label>state <select name=\"state\"><option value=\"\">all</option>";
    for (const auto s : {KeyState::Firing, KeyState::Acknowledged, KeyState::Failing,
                         KeyState::Breached, KeyState::InsufficientData, KeyState::InBand}) {
      const std::string name(to_string(s));
      html += "<option value=\"" + name + "\"" +
              (query.state && *query.state == s ? " selected" : "") + ">" + name + "</option>";
    }
    html +=
        "</select></label> <button type=\"submit\">filter</button> <a href=\"/\">clear</a></form>";
  } else {
    html +=
        "<p class=\"muted\">A static report: every key, no filters (the daemon's dashboard "
        "filters by environment, benchmark, provider and state).</p>";
  }
  html += "</section></div>";

  // Open alerts first.
  std::vector<const KeyRow*> open;
  for (const auto* row : shown) {
    if (row->state != KeyState::InBand && row->state != KeyState::InsufficientData)
      open.push_back(row);
  }
  std::sort(open.begin(), open.end(),
            [](const KeyRow* a, const KeyRow* b) { return open_first(*a, *b); });
  if (query.page == 1 && !open.empty()) {
    html += "<section id=\"open\"><h2>Open alerts and breaches (" + std::to_string(open.size()) +
            ")</h2><div class=\"scroll\"><table class=\"keys open\"><thead><tr><th>environment "
            "/ benchmark</th>" +
            std::string(kKeyTableHead).substr(11);
    html.resize(html.size() - std::string("</tr></thead>").size());
    html += "</tr></thead><tbody>";
    const std::size_t limit = std::min<std::size_t>(open.size(), kOverviewPageSize);
    for (std::size_t i = 0; i < limit; ++i) {
      const auto& row = *open[i];
      html += "<tr class=\"key\" data-state=\"" + std::string(to_string(row.state)) + "\"><td>" +
              escape(row.key.environment) + "<br>" + escape(row.key.benchmark) + "</td>" +
              key_cells(row, mode) + "</tr>";
    }
    html += "</tbody></table></div></section>";
  }

  std::sort(shown.begin(), shown.end(), [](const KeyRow* a, const KeyRow* b) {
    return std::tie(a->key.environment, a->key.benchmark, a->key.provider, a->key.workload,
                    a->key.protocol) < std::tie(b->key.environment, b->key.benchmark,
                                                b->key.provider, b->key.workload, b->key.protocol);
  });
  const std::size_t pages =
      std::max<std::size_t>(1, (shown.size() + kOverviewPageSize - 1) / kOverviewPageSize);
  const std::size_t page = std::min(query.page, pages);
  const std::size_t begin = (page - 1) * kOverviewPageSize;
  const std::size_t end = std::min(shown.size(), begin + kOverviewPageSize);
  html += "<section id=\"keys\"><h2>Keys by environment and benchmark</h2>";
  if (shown.empty()) html += "<p>No key matches.</p>";
  std::string environment;
  std::string benchmark;
  bool table_open = false;
  for (std::size_t i = begin; i < end; ++i) {
    const auto& row = *shown[i];
    if (!table_open || row.key.environment != environment || row.key.benchmark != benchmark) {
      if (table_open) html += "</tbody></table></div>";
      if (row.key.environment != environment || !table_open) {
        html += "<h3 class=\"env\">" + escape(row.key.environment) + "</h3>";
      }
      environment = row.key.environment;
      benchmark = row.key.benchmark;
      html += "<h4 class=\"bench\">" + escape(benchmark) +
              "</h4><div class=\"scroll\"><table class=\"keys\">" + kKeyTableHead + "<tbody>";
      table_open = true;
    }
    html += "<tr class=\"key\" data-state=\"" + std::string(to_string(row.state)) + "\">" +
            key_cells(row, mode) + "</tr>";
  }
  if (table_open) html += "</tbody></table></div>";
  if (pages > 1) {
    html += "<nav class=\"pages\" aria-label=\"pages\">page " + std::to_string(page) + " of " +
            std::to_string(pages) + " (" + std::to_string(shown.size()) + " keys) ";
    if (page > 1)
      html += "<a rel=\"prev\" href=\"" + escape(overview_page_href(query, page - 1, mode)) +
              "\">&larr; previous</a> ";
    if (page < pages)
      html += "<a rel=\"next\" href=\"" + escape(overview_page_href(query, page + 1, mode)) +
              "\">next &rarr;</a>";
    html += "</nav>";
  }
  html += "</section>";
  return html + foot(mode);
}

// ---- key page ----

core::Result<KeyQuery> parse_key_query(const Query& query) {
  KW_TRY(only_known(query, {"from", "to", "last", "scale", "rows"}));
  KeyQuery out;
  for (const auto& [name, value] : query) {
    if (value.empty()) continue;  // an empty form field means "not set"
    if (name == "from") out.from = KW_TRY(parse_day_or_time(name, value, false));
    if (name == "to") out.to = KW_TRY(parse_day_or_time(name, value, true));
    if (name == "last") {
      out.last = value == "all" ? 0 : KW_TRY(parse_count("last", value, 1, 100000));
    }
    if (name == "scale") {
      if (value != "linear" && value != "log")
        return core::fail(ErrorCode::InvalidArgument, "scale must be linear or log");
      out.scale = value == "log" ? Scale::Log : Scale::Linear;
    }
    if (name == "rows") out.rows_page = KW_TRY(parse_count("rows", value, 1, 1000000));
  }
  if (out.from && out.to && *out.to <= *out.from)
    return core::fail(ErrorCode::InvalidArgument, "to must be after from");
  return out;
}

namespace {

struct Chart {
  double width = 960;
  double height = 380;
  double left = 78;
  double right = 14;
  double top = 66;
  double bottom = 40;
  double lo = 0;
  double hi = 1;
  Scale scale = Scale::Linear;
  std::size_t n = 1;

  [[nodiscard]] double plot_w() const { return width - left - right; }
  [[nodiscard]] double plot_h() const { return height - top - bottom; }
  [[nodiscard]] double step() const { return plot_w() / static_cast<double>(n); }
  [[nodiscard]] double x(std::size_t i) const {
    return left + step() * (static_cast<double>(i) + 0.5);
  }
  [[nodiscard]] double f(double v) const {
    return scale == Scale::Log ? std::log10(std::max(v, 1e-9)) : v;
  }
  [[nodiscard]] double y(double v) const {
    return top + plot_h() * (1 - (f(v) - f(lo)) / (f(hi) - f(lo)));
  }
  [[nodiscard]] double y(nanoseconds v) const { return y(static_cast<double>(v.count())); }
  [[nodiscard]] double floor_y() const { return top + plot_h() - 6; }
};

std::string shape(std::string_view kind, double x, double y, double r) {
  const std::string X = num(x);
  const std::string Y = num(y);
  if (kind == "reg") {  // triangle up
    return "M" + X + "," + num(y - r * 1.2) + "L" + num(x + r) + "," + num(y + r * 0.8) + "L" +
           num(x - r) + "," + num(y + r * 0.8) + "Z";
  }
  if (kind == "imp") {  // triangle down
    return "M" + X + "," + num(y + r * 1.2) + "L" + num(x + r) + "," + num(y - r * 0.8) + "L" +
           num(x - r) + "," + num(y - r * 0.8) + "Z";
  }
  if (kind == "inconclusive") {  // diamond
    return "M" + X + "," + num(y - r) + "L" + num(x + r) + "," + Y + "L" + X + "," + num(y + r) +
           "L" + num(x - r) + "," + Y + "Z";
  }
  if (kind == "failed") {  // a cross
    return "M" + num(x - r) + "," + num(y - r) + "L" + num(x + r) + "," + num(y + r) + "M" +
           num(x - r) + "," + num(y + r) + "L" + num(x + r) + "," + num(y - r);
  }
  // circle (in band; hollow for insufficient data, by its class)
  return "M" + num(x - r) + "," + Y + "a" + num(r) + "," + num(r) + " 0 1,0 " + num(2 * r) + ",0a" +
         num(r) + "," + num(r) + " 0 1,0 " + num(-2 * r) + ",0";
}

std::string point_kind(const ReplayedRun& r) {
  if (core::is_failure(r.run.status)) return "failed";
  if (core::outcome_of(r.run.status) == core::RunOutcome::Inconclusive || !r.run.median ||
      r.verdict.kind == detectors::VerdictKind::Inconclusive)
    return "inconclusive";
  switch (r.verdict.kind) {
    case detectors::VerdictKind::Regression:
      return "reg";
    case detectors::VerdictKind::Improvement:
      return "imp";
    case detectors::VerdictKind::InsufficientData:
      return "insufficient";
    default:
      return "in";
  }
}

std::string verdict_words(const ReplayedRun& r) {
  if (r.run.status != core::RunStatus::Passed) {
    return std::string(core::to_string(r.run.status)) +
           (r.run.status_reason.empty() ? "" : ": " + r.run.status_reason);
  }
  std::string text(detectors::to_string(r.verdict.kind));
  std::replace(text.begin(), text.end(), '_', ' ');
  if (r.role == detectors::RunRole::Pending) text += " (awaiting confirmation)";
  if (r.role == detectors::RunRole::Confirmed) text += " (confirmed)";
  if (r.role == detectors::RunRole::Returned) text += " (back in the earlier band)";
  return text;
}

std::string run_tip(const ReplayedRun& r) {
  std::string text = format_time(r.run.observed_at) + " | run " + r.run.external_id + " | median " +
                     (r.run.median ? core::format_latency(*r.run.median) : std::string("-")) +
                     " | p20 " + (r.run.p20 ? core::format_latency(*r.run.p20) : "-") + " | p80 " +
                     (r.run.p80 ? core::format_latency(*r.run.p80) : "-") + " | version " +
                     (r.run.implementation_version.empty() ? "-" : r.run.implementation_version) +
                     " | " + verdict_words(r);
  if (r.verdict.has_band) {
    text += " | band [" + core::format_latency(r.verdict.band.lower) + ", " +
            core::format_latency(r.verdict.band.upper) + "] " +
            format_percent(r.verdict.relative_change);
  }
  if (!r.changes.empty()) text += " | " + core::describe(r.changes);
  return text;
}

std::string short_change(const std::vector<core::AttributionChange>& changes) {
  for (const auto& c : changes) {
    if (c.field.find("version") != std::string::npos)
      return c.from + "\xE2\x86\x92" + c.to;  // "->"
  }
  std::string text;
  for (const auto& c : changes) {
    if (!text.empty()) text += ", ";
    text += c.field;
  }
  return text + " changed";
}

// The chart: per-run band (shaded, dashed edges), p20-p80 spread, median markers by verdict
// (shape carries the verdict), segment starts, rebaselines, attribution ticks, alerts.
std::string chart_svg(const std::vector<const ReplayedRun*>& runs,
                      const std::vector<core::Alert>& alerts, Scale scale, LinkMode mode, int depth,
                      std::string_view highlight, std::string_view label) {
  Chart c;
  c.scale = scale;
  c.n = std::max<std::size_t>(1, runs.size());
  double lo = 0;
  double hi = 0;
  bool any = false;
  const auto widen = [&](std::optional<nanoseconds> v) {
    if (!v || v->count() <= 0) return;
    const double d = static_cast<double>(v->count());
    lo = any ? std::min(lo, d) : d;
    hi = any ? std::max(hi, d) : d;
    any = true;
  };
  for (const auto* r : runs) {
    widen(r->run.median);
    widen(r->run.p20);
    widen(r->run.p80);
    if (r->verdict.has_band) {
      widen(r->verdict.band.lower);
      widen(r->verdict.band.upper);
    }
  }
  if (!any) {
    lo = 1;
    hi = 2;
  }
  if (scale == Scale::Log) {
    c.lo = lo / 1.08;
    c.hi = hi * 1.08;
  } else {
    const double pad = hi > lo ? (hi - lo) * 0.08 : hi * 0.05 + 1;
    c.lo = std::max(0.0, lo - pad);
    c.hi = hi + pad;
  }
  const double r = runs.size() > 150 ? 2.6 : runs.size() > 60 ? 3.4 : 4.5;
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + num(c.width) + " " + num(c.height) +
                    "\" role=\"img\" aria-label=\"" + escape(label) +
                    "\" preserveAspectRatio=\"xMidYMid meet\">";
  // Axes and grid.
  svg += "<g class=\"grid\">";
  for (int i = 0; i <= 4; ++i) {
    const double fv = c.f(c.lo) + (c.f(c.hi) - c.f(c.lo)) * i / 4.0;
    const double v = scale == Scale::Log ? std::pow(10.0, fv) : fv;
    const double y = c.y(v);
    svg += "<line x1=\"" + num(c.left) + "\" x2=\"" + num(c.width - c.right) + "\" y1=\"" + num(y) +
           "\" y2=\"" + num(y) + "\"/><text class=\"ylab\" x=\"" + num(c.left - 6) + "\" y=\"" +
           num(y + 4) + "\">" + escape(core::format_latency(v)) + "</text>";
  }
  const std::size_t ticks = std::min<std::size_t>(runs.size(), 6);
  for (std::size_t t = 0; t < ticks; ++t) {
    const std::size_t i = ticks == 1 ? 0 : t * (runs.size() - 1) / (ticks - 1);
    const char* anchor = t == 0 && ticks > 1           ? "start"
                         : t + 1 == ticks && ticks > 1 ? "end"
                                                       : "middle";
    svg += "<text class=\"xlab\" text-anchor=\"" + std::string(anchor) + "\" x=\"" + num(c.x(i)) +
           "\" y=\"" + num(c.height - 12) + "\">" +
           escape(core::format_timestamp(runs[i]->run.observed_at).substr(0, 10)) + "</text>";
  }
  svg += "<text class=\"axis-name\" x=\"" + num(c.width - c.right) +
         "\" y=\"14\">median per run, " + std::string(scale == Scale::Log ? "log" : "linear") +
         " scale</text></g>";

  // The band each run was judged against, one shaded region per stretch of runs with a band.
  std::string band;
  std::string upper;
  std::string lower;
  for (std::size_t i = 0; i < runs.size();) {
    if (!runs[i]->verdict.has_band) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < runs.size() && runs[j]->verdict.has_band) ++j;
    std::string up = "M";
    std::string down;
    for (std::size_t k = i; k < j; ++k) {
      const auto& b = runs[k]->verdict.band;
      const double x0 = c.x(k) - c.step() / 2;
      const double x1 = c.x(k) + c.step() / 2;
      up += num(x0) + "," + num(c.y(b.upper)) + "L" + num(x1) + "," + num(c.y(b.upper)) + "L";
      down =
          "L" + num(x1) + "," + num(c.y(b.lower)) + "L" + num(x0) + "," + num(c.y(b.lower)) + down;
    }
    up.pop_back();
    band += up + down + "Z";
    upper += up;
    std::string low = "M" + down.substr(1);
    lower += low;
    i = j;
  }
  if (!band.empty()) {
    svg += "<path class=\"band\" d=\"" + band +
           "\"><title>the band each run was judged against"
           "</title></path><path class=\"band-edge\" d=\"" +
           upper + lower + "\"/>";
  }
  // Spread p20-p80.
  std::string spread;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i]->run;
    if (run.p20 && run.p80 && run.p20->count() > 0) {
      spread += "M" + num(c.x(i)) + "," + num(c.y(*run.p80)) + "V" + num(c.y(*run.p20));
    }
  }
  if (!spread.empty()) svg += "<path class=\"spread\" d=\"" + spread + "\"/>";
  // Segment starts, rebaselines, attribution: a tick at every run where something recorded
  // changed (its tooltip says what); a label only for version changes with room for it.
  double last_label = -1e9;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const double x = c.x(i) - c.step() / 2;
    if (runs[i]->segment_start) {
      svg += "<g class=\"segment\"><line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" +
             num(c.top) + "\" y2=\"" + num(c.top + c.plot_h()) + "\"/><text x=\"" + num(x + 3) +
             "\" y=\"" + num(c.top + c.plot_h() - 4) + "\">new segment</text></g>";
    }
    if (runs[i]->rebaseline) {
      svg += "<g class=\"rebaseline\"><line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" +
             num(c.top) + "\" y2=\"" + num(c.top + c.plot_h()) + "\"/><text x=\"" + num(x + 3) +
             "\" y=\"" + num(c.top + 12) + "\">rebaseline</text></g>";
    }
    if (!runs[i]->changes.empty()) {
      svg += "<g class=\"attr\"><line x1=\"" + num(c.x(i)) + "\" x2=\"" + num(c.x(i)) + "\" y1=\"" +
             num(c.top - 8) + "\" y2=\"" + num(c.top) + "\"/><title>" +
             escape(core::describe(runs[i]->changes)) + "</title>";
      const bool version = runs[i]->changes.front().field.find("version") != std::string::npos;
      if (version && c.x(i) - last_label > 64) {
        svg += "<text x=\"" + num(c.x(i)) + "\" y=\"" + num(c.top - 11) + "\">" +
               escape(short_change(runs[i]->changes)) + "</text>";
        last_label = c.x(i);
      }
      svg += "</g>";
    }
  }
  // Alerts at their onset (a flag and the change) and their firing run (a ring).
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < runs.size(); ++i) index[runs[i]->run.external_id] = i;
  for (const auto& alert : alerts) {
    const auto onset = index.find(alert.kind == core::AlertKind::Failed ? alert.fired.external_id
                                                                        : alert.onset.external_id);
    if (onset == index.end()) continue;
    const double x = c.x(onset->second);
    const bool imp = alert.direction == core::Direction::Improvement;
    std::string text =
        std::string(alert.kind == core::AlertKind::Failed ? "\xE2\x9C\x97 failed"
                    : imp                                 ? "\xE2\x96\xBC "
                                                          : "\xE2\x96\xB2 ") +
        (alert.kind == core::AlertKind::Failed ? std::string()
                                               : std::string(core::to_string(alert.kind)) + " " +
                                                     format_percent(alert.relative_change));
    const char* anchor = x < c.left + 70 ? "start" : x > c.width - c.right - 70 ? "end" : "middle";
    svg += "<a class=\"alert-mark" + std::string(imp ? " imp" : " reg") +
           (alert_page_id(alert) == highlight ? " current" : "") + "\" href=\"" +
           escape(alert_href(alert_page_id(alert), mode, depth)) + "\" data-alert=\"" +
           escape(alert_page_id(alert)) + "\" data-fired=\"" + escape(alert.fired.external_id) +
           "\"><title>alert " + escape(alert_page_id(alert)) + ": " + escape(alert.explanation) +
           "</title><line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(c.top - 26) +
           "\" y2=\"" + num(c.top + c.plot_h()) + "\"/><text text-anchor=\"" + anchor + "\" x=\"" +
           num(x) + "\" y=\"" + num(c.top - 28) + "\">" + escape(text) + "</text></a>";
    if (const auto fired = index.find(alert.fired.external_id);
        fired != index.end() && alert.fired.median.count() > 0) {
      svg += "<circle class=\"fire-ring\" cx=\"" + num(c.x(fired->second)) + "\" cy=\"" +
             num(c.y(alert.fired.median)) + "\" r=\"" + num(r + 4) + "\"/>";
    }
  }
  // Median markers, one focusable element per run.
  svg += "<g class=\"points\">";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = *runs[i];
    const std::string kind = point_kind(run);
    const double y =
        run.run.median && run.run.median->count() > 0 ? c.y(*run.run.median) : c.floor_y();
    svg += "<path class=\"pt k-" + kind + "\" tabindex=\"0\" d=\"" + shape(kind, c.x(i), y, r) +
           "\"><title>" + escape(run_tip(run)) + "</title></path>";
  }
  svg += "</g></svg>";
  return svg;
}

std::string legend() {
  const auto item = [](const char* kind, const char* text) {
    return std::string(
               "<li><svg viewBox=\"0 0 16 16\" aria-hidden=\"true\"><path class=\"lg pt k-") +
           kind + "\" d=\"" + shape(kind, 8, 8, 5) + "\"/></svg>" + text + "</li>";
  };
  return "<ul class=\"legend\">" + item("in", "in band") +
         item("insufficient", "insufficient data") + item("reg", "regression (slower)") +
         item("imp", "improvement (faster)") + item("inconclusive", "inconclusive") +
         item("failed", "failed") +
         "<li><span class=\"sw band-sw\"></span>band the run was judged against</li>"
         "<li><span class=\"sw spread-sw\"></span>p20&ndash;p80 of the run</li>"
         "<li><span class=\"sw seg-sw\"></span>new segment / rebaseline</li>"
         "<li>&#9650;/&#9660; label: alert at its onset, ring: firing run</li></ul>";
}

// The last part of an externalId ("layer_norm/.../2026-03-20-01-01-36" ->
// "...2026-03-20-01-01-36"); the whole id is in the cell's title and data-id.
std::string short_id(const std::string& id) {
  const auto slash = id.rfind('/');
  return slash == std::string::npos || slash + 1 == id.size()
             ? id
             : "\xE2\x80\xA6" + id.substr(slash + 1);
}

std::string run_table(const std::vector<const ReplayedRun*>& newest_first, std::size_t begin,
                      std::size_t end) {
  std::string html =
      "<div class=\"scroll\"><table class=\"runs\"><thead><tr><th>observed</th><th>run</th>"
      "<th>status</th><th>median</th><th>p20</th><th>p80</th><th>version</th><th>verdict</th>"
      "<th>band</th><th>change</th><th>notes</th></tr></thead><tbody>";
  for (std::size_t i = begin; i < end; ++i) {
    const auto& r = *newest_first[i];
    std::string notes;
    if (r.segment_start) notes += "new segment. ";
    if (r.rebaseline) notes += "rebaselined before this run. ";
    if (!r.changes.empty()) notes += core::describe(r.changes) + ". ";
    html +=
        "<tr class=\"run k-" + point_kind(r) + "\"><td>" + escape(format_time(r.run.observed_at)) +
        "</td><td class=\"id\" data-id=\"" + escape(r.run.external_id) + "\" title=\"" +
        escape(r.run.external_id) + "\">" + escape(short_id(r.run.external_id)) + "</td><td>" +
        escape(core::to_string(r.run.status)) + "</td><td class=\"num\">" + latency(r.run.median) +
        "</td><td class=\"num\">" + latency(r.run.p20) + "</td><td class=\"num\">" +
        latency(r.run.p80) + "</td><td>" + escape(r.run.implementation_version) + "</td><td>" +
        escape(verdict_words(r)) + "</td><td class=\"num\">" +
        (r.verdict.has_band ? band_text(r.verdict.band) : std::string("&ndash;")) +
        "</td><td class=\"num\">" +
        (r.verdict.has_band ? escape(format_percent(r.verdict.relative_change))
                            : std::string("&ndash;")) +
        "</td><td>" + escape(notes) + "</td></tr>";
  }
  return html + "</tbody></table></div>";
}

std::string labels_dl(const core::KeyLabels& key) {
  return "<dl class=\"labels\"><dt>benchmark</dt><dd>" + escape(key.benchmark) +
         "</dd><dt>provider</dt><dd>" + escape(key.provider) + "</dd><dt>workload</dt><dd>" +
         escape(key.workload) + "</dd><dt>environment</dt><dd>" + escape(key.environment) +
         "</dd><dt>protocol</dt><dd>" + escape(key.protocol) +
         "</dd><dt>key digest</dt><dd class=\"id\">" + escape(key.digest) + "</dd></dl>";
}

std::string alert_rows(const std::vector<core::Alert>& alerts, LinkMode mode, int depth,
                       const std::vector<storage::AlertRow>& stored) {
  std::set<std::string> stored_ids;
  for (const auto& row : stored) stored_ids.insert(alert_page_id(row.alert));
  std::string html =
      "<div class=\"scroll\"><table class=\"alerts\"><thead><tr><th>onset</th><th>kind</th>"
      "<th>direction</th><th>change</th><th>band</th><th>state</th><th>source</th></tr></thead>"
      "<tbody>";
  const auto row_of = [&](const core::Alert& a, const char* source) {
    return "<tr><td><a href=\"" + escape(alert_href(alert_page_id(a), mode, depth)) + "\">" +
           escape(format_time(a.onset.observed_at.time_since_epoch().count() != 0
                                  ? a.onset.observed_at
                                  : a.fired.observed_at)) +
           "</a></td><td>" + escape(core::to_string(a.kind)) + "</td><td>" +
           direction_word(a.direction) + "</td><td class=\"num\">" +
           escape(format_percent(a.relative_change)) + "</td><td class=\"num\">" +
           band_text(a.band) + "</td><td>" + alert_state_badge(a.state) + "</td><td>" + source +
           "</td></tr>";
  };
  for (const auto& row : stored) html += row_of(row.alert, "stored by the daemon");
  for (const auto& alert : alerts) {
    if (stored_ids.count(alert_page_id(alert)) == 0) html += row_of(alert, "replay of the history");
  }
  return html + "</tbody></table></div>";
}

// The replay's alerts and the stored ones it did not raise (a posted run the daemon judged
// alone, say): both are marked on a chart.
std::vector<core::Alert> with_stored(const std::vector<core::Alert>& replayed,
                                     const std::vector<storage::AlertRow>& stored,
                                     const core::Alert* also = nullptr) {
  std::vector<core::Alert> alerts = replayed;
  const auto add = [&](const core::Alert& alert) {
    const bool known = std::any_of(alerts.begin(), alerts.end(), [&](const core::Alert& a) {
      return alert_page_id(a) == alert_page_id(alert);
    });
    if (!known) alerts.push_back(alert);
  };
  for (const auto& row : stored) add(row.alert);
  if (also != nullptr) add(*also);
  return alerts;
}

std::string key_query_href(std::string_view ref, const KeyQuery& q, std::size_t rows_page) {
  std::string href = "/keys/" + std::string(ref) + "?";
  if (q.from) href += "from=" + url_component(core::format_timestamp(*q.from)) + "&";
  if (q.to) href += "to=" + url_component(core::format_timestamp(*q.to)) + "&";
  href += "last=" + (q.last == 0 ? std::string("all") : std::to_string(q.last));
  if (q.scale == Scale::Log) href += "&scale=log";
  return href + "&rows=" + std::to_string(rows_page);
}

}  // namespace

std::string render_key(const KeyReplay& replay, const std::vector<storage::AlertRow>& stored,
                       const KeyQuery& query, LinkMode mode) {
  const std::string ref = key_ref(replay.key);
  std::vector<const ReplayedRun*> in_range;
  for (const auto& run : replay.runs) {
    if (query.from && run.run.observed_at < *query.from) continue;
    if (query.to && run.run.observed_at >= *query.to) continue;
    in_range.push_back(&run);
  }
  std::vector<const ReplayedRun*> charted = in_range;
  if (query.last != 0 && charted.size() > query.last) {
    charted.erase(charted.begin(), charted.end() - static_cast<std::ptrdiff_t>(query.last));
  }
  std::string html = head(replay.key.benchmark + " " + replay.key.provider, mode, 1);
  html += "<nav class=\"crumbs\"><a href=\"" +
          escape(mode == LinkMode::Served ? "/" : "../index.html") + "\">overview</a> / " +
          escape(replay.key.environment) + " / " + escape(replay.key.benchmark) + "</nav><h1>" +
          escape(replay.key.benchmark) + " <span class=\"sub\">" + escape(replay.key.provider) +
          " " + escape(replay.key.workload) + "</span></h1>" + labels_dl(replay.key);
  // Controls: range and scale (the daemon answers them; a static report has both scales).
  if (mode == LinkMode::Served) {
    const auto day = [](const std::optional<core::Timestamp>& t) {
      return t ? escape(core::format_timestamp(*t).substr(0, 10)) : std::string();
    };
    html += "<form class=\"range\" method=\"get\" action=\"/keys/" + escape(ref) +
            "\"><label>from <input type=\"date\" name=\"from\" value=\"" + day(query.from) +
            "\"></label> <label>to <input type=\"date\" name=\"to\" value=\"" +
            day(query.to ? std::optional<core::Timestamp>(*query.to - std::chrono::hours(24))
                         : std::nullopt) +
            "\"></label> <label>newest <select name=\"last\">";
    for (const char* n : {"100", "400", "1000", "5000", "all"}) {
      const std::string chosen = query.last == 0 ? "all" : std::to_string(query.last);
      html += std::string("<option") + (chosen == n ? " selected" : "") + ">" + n + "</option>";
    }
    html +=
        "</select> runs</label> <fieldset class=\"scale\"><legend>scale</legend><label><input "
        "type=\"radio\" name=\"scale\" value=\"linear\"" +
        std::string(query.scale == Scale::Linear ? " checked" : "") +
        "> linear</label> <label><input type=\"radio\" name=\"scale\" value=\"log\"" +
        (query.scale == Scale::Log ? " checked" : "") +
        "> log</label></fieldset> <button type=\"submit\">show</button></form>";
  } else {
    html += "<p class=\"range\">scale: " +
            std::string(query.scale == Scale::Linear
                            ? "<strong>linear</strong> | <a href=\"" +
                                  escape(key_href(ref, mode, 1, Scale::Log)) + "\">log</a>"
                            : "<a href=\"" + escape(key_href(ref, mode, 1, Scale::Linear)) +
                                  "\">linear</a> | <strong>log</strong>") +
            "</p>";
  }
  const std::string caption = charted.empty()
                                  ? std::string("no runs in this range")
                                  : std::to_string(charted.size()) + " runs from " +
                                        format_time(charted.front()->run.observed_at) + " to " +
                                        format_time(charted.back()->run.observed_at) + " (of " +
                                        std::to_string(replay.runs.size()) + " stored)";
  html += "<figure class=\"chart-box\" data-runs=\"" + std::to_string(charted.size()) + "\">";
  if (!charted.empty()) {
    html += chart_svg(charted, with_stored(replay.alerts, stored), query.scale, mode, 1, "",
                      replay.key.display() + ": " + caption);
  }
  html += "<figcaption>" + escape(caption) + "</figcaption>" + legend() + "</figure>";

  html += "<section id=\"alerts\"><h2>Alerts</h2>";
  if (replay.alerts.empty() && stored.empty()) {
    html += "<p>No alert in this key's history.</p>";
  } else {
    html += alert_rows(replay.alerts, mode, 1, stored);
  }
  html += "</section>";

  // The runs of the range, newest first, a page at a time.
  std::vector<const ReplayedRun*> newest(in_range.rbegin(), in_range.rend());
  const std::size_t pages = std::max<std::size_t>(1, (newest.size() + kTableRows - 1) / kTableRows);
  const std::size_t page = mode == LinkMode::Static ? 1 : std::min(query.rows_page, pages);
  const std::size_t begin = (page - 1) * kTableRows;
  const std::size_t end = std::min(newest.size(), begin + kTableRows);
  html +=
      "<section id=\"runs\"><h2>Runs (" + std::to_string(newest.size()) + ", newest first)</h2>";
  html += run_table(newest, begin, end);
  if (pages > 1) {
    html += "<nav class=\"pages\" aria-label=\"run pages\">runs " + std::to_string(begin + 1) +
            "&ndash;" + std::to_string(end) + " of " + std::to_string(newest.size()) + " ";
    if (mode == LinkMode::Served) {
      if (page > 1)
        html += "<a rel=\"prev\" href=\"" + escape(key_query_href(ref, query, page - 1)) +
                "\">&larr; newer</a> ";
      if (page < pages)
        html += "<a rel=\"next\" href=\"" + escape(key_query_href(ref, query, page + 1)) +
                "\">older &rarr;</a>";
    } else {
      html += "(the daemon's dashboard pages through the rest)";
    }
    html += "</nav>";
  }
  html += "</section>";
  return html + foot(mode);
}

// ---- alert page ----

std::string render_alert(const AlertView& view, LinkMode mode) {
  const auto& a = view.alert;
  const std::string id = alert_page_id(a);
  std::string html = head("alert " + a.key.benchmark + " " + a.key.provider, mode, 1);
  html += "<nav class=\"crumbs\"><a href=\"" +
          escape(mode == LinkMode::Served ? "/" : "../index.html") + "\">overview</a>";
  if (!a.key.digest.empty() && a.kind != core::AlertKind::Environment) {
    html += " / <a href=\"" + escape(key_href(key_ref(a.key), mode, 1)) + "\">" +
            escape(a.key.display()) + "</a>";
  }
  html += "</nav><h1>" + escape(core::to_string(a.kind)) + " alert " + alert_state_badge(a.state) +
          "</h1><p class=\"id\">id " + escape(id) + "</p><p class=\"explain\">" +
          escape(a.explanation) + "</p>";
  html += "<section id=\"what\"><h2>What fired</h2><dl class=\"facts\"><dt>key</dt><dd>" +
          escape(a.key.display()) + "</dd><dt>direction</dt><dd>" + direction_word(a.direction) +
          "</dd><dt>change</dt><dd class=\"change\">" + escape(format_percent(a.relative_change)) +
          " against the band centre " + escape(core::format_latency(a.band.center)) +
          "</dd><dt>band</dt><dd class=\"alert-band\">" + band_text(a.band) + " from " +
          std::to_string(a.baseline_runs) + " baseline runs</dd><dt>onset</dt><dd>" +
          escape(format_time(a.onset.observed_at)) + " run " + escape(a.onset.external_id) +
          ", median " + escape(core::format_latency(a.onset.median)) +
          "</dd><dt>fired at</dt><dd>" + escape(format_time(a.fired.observed_at)) + " run " +
          escape(a.fired.external_id) + ", median " + escape(core::format_latency(a.fired.median)) +
          "</dd>";
  if (a.closed_by) {
    html += "<dt>closed by</dt><dd>" + escape(format_time(a.closed_by->observed_at)) + " run " +
            escape(a.closed_by->external_id) + "</dd>";
  }
  html += "<dt>attribution</dt><dd>";
  if (a.attribution.empty()) {
    html += "no recorded implementation or software change";
  } else {
    html += "<ul class=\"attribution\">";
    for (const auto& c : a.attribution) {
      html += "<li>" + escape(c.field) + ": " + escape(c.from.empty() ? "(none)" : c.from) +
              " &rarr; " + escape(c.to.empty() ? "(none)" : c.to) + "</li>";
    }
    html += "</ul>";
  }
  html += "</dd><dt>stored</dt><dd>" +
          std::string(view.row ? "yes, by the daemon (updated " +
                                     escape(format_time(view.row->updated_at)) + ")"
                               : "no: found by replaying the key's imported history; never paged") +
          "</dd></dl></section>";

  if (view.replay) {
    // The history around the alert: its baseline before the onset and a few runs after.
    const auto& runs = view.replay->runs;
    std::size_t onset = runs.size();
    std::size_t fired = runs.size();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].run.external_id == a.onset.external_id && onset == runs.size()) onset = i;
      if (runs[i].run.external_id == a.fired.external_id) fired = i;
    }
    if (onset == runs.size()) onset = fired;
    if (onset < runs.size()) {
      std::vector<const ReplayedRun*> baseline;
      for (std::size_t i = onset; i-- > 0 && baseline.size() < a.baseline_runs;) {
        if (runs[i].role == detectors::RunRole::Accepted) baseline.push_back(&runs[i]);
      }
      const std::size_t first = onset > a.baseline_runs + 10 ? onset - a.baseline_runs - 10 : 0;
      const std::size_t last = std::min(runs.size(), std::max(fired, onset) + 15);
      std::vector<const ReplayedRun*> window;
      for (std::size_t i = first; i < last; ++i) window.push_back(&runs[i]);
      html +=
          "<section id=\"history\"><h2>The band and the runs around it</h2><figure "
          "class=\"chart-box\">" +
          chart_svg(window, with_stored(view.replay->alerts, {}, &a), Scale::Linear, mode, 1, id,
                    "runs around the alert") +
          "<figcaption>" + std::to_string(window.size()) +
          " runs around the onset; the alert's own flag is bold.</figcaption>" + legend() +
          "</figure><h3>Baseline runs (" + std::to_string(baseline.size()) +
          ", newest first)</h3>" + run_table(baseline, 0, baseline.size()) + "</section>";
    }
  }

  html += "<section id=\"notifications\"><h2>Notifications</h2>";
  if (!view.row) {
    html += "<p>None: this alert was not raised by the daemon, so nothing was sent.</p>";
  } else if (view.notifications.empty()) {
    html +=
        "<p>None queued for this alert (no destination configured, or delivered rows were "
        "pruned).</p>";
  } else {
    html +=
        "<div class=\"scroll\"><table class=\"notifications\"><thead><tr><th>destination</th>"
        "<th>queued</th><th>state</th><th>finished</th><th>attempts</th><th>last error</th>"
        "</tr></thead><tbody>";
    for (const auto& n : view.notifications) {
      const std::string state(storage::to_string(n.state));
      html += "<tr><td>" + escape(n.destination) + "</td><td>" + escape(format_time(n.created_at)) +
              "</td><td>" +
              (n.state == storage::OutboxState::Delivered ? "&#10003; "
               : n.state == storage::OutboxState::Dead    ? "&#10007; "
                                                          : "&#8230; ") +
              escape(state) + "</td><td>" +
              (n.finished_at ? escape(format_time(*n.finished_at)) : std::string("&ndash;")) +
              "</td><td class=\"num\">" + std::to_string(n.attempts) + "</td><td>" +
              escape(n.last_error) + "</td></tr>";
    }
    html += "</tbody></table></div>";
  }
  html += "</section>";

  html += "<section id=\"act\"><h2>Acknowledge or rebaseline</h2>";
  const bool open =
      a.state == core::AlertState::Firing || a.state == core::AlertState::Acknowledged;
  const std::string api = "/api/v1/alerts/" + url_component(id) + "/ack";
  if (!view.row) {
    html += "<p>Only alerts the daemon stored can be acknowledged.</p>";
  } else if (!open) {
    html += "<p>This alert is " + escape(core::to_string(a.state)) + ": nothing to do.</p>";
  } else if (mode == LinkMode::Static) {
    html +=
        "<p>From the daemon's dashboard, or: <code>curl -X POST -H 'Authorization: Bearer "
        "TOKEN' -d '{\"rebaseline\": false}' http://HOST:9477" +
        escape(api) + "</code></p>";
  } else {
    html += "<form id=\"ack-form\" class=\"ack\" data-api=\"" + escape(api) +
            "\" autocomplete=\"off\"><p>The API token is sent with this one request and is not "
            "stored in the page.</p><label>API token <input type=\"password\" name=\"token\" "
            "id=\"ack-token\" required autocomplete=\"off\"></label> <button type=\"submit\" "
            "name=\"action\" value=\"acknowledge\">acknowledge</button> <button type=\"submit\" "
            "name=\"action\" value=\"rebaseline\">rebaseline (accept the new level)</button>"
            "<output id=\"ack-result\" role=\"status\"></output></form><noscript><p>Needs "
            "JavaScript; or POST " +
            escape(api) + " with the token.</p></noscript>";
  }
  html += "</section>";
  return html + foot(mode);
}

// ---- errors ----

Page not_found_page(std::string_view what, LinkMode mode) {
  return {404, head("not found", mode, 1) + "<h1>Not found</h1><p class=\"error\">" + escape(what) +
                   "</p><p><a href=\"" + escape(mode == LinkMode::Served ? "/" : "../index.html") +
                   "\">back to the overview</a></p>" + foot(mode)};
}

Page bad_request_page(std::string_view message, LinkMode mode) {
  return {400, head("bad request", mode, 1) + "<h1>Bad request</h1><p class=\"error\">" +
                   escape(message) + "</p><p><a href=\"" +
                   escape(mode == LinkMode::Served ? "/" : "../index.html") +
                   "\">back to the overview</a></p>" + foot(mode)};
}

}  // namespace kernelwatch::web
