// The overview page: every key grouped by environment and benchmark, open alerts first, filters,
// the daemon's state, and the hosts and GPUs the runs name.
#include <algorithm>
#include <set>
#include <tuple>

#include "web/detail/page_parts.hpp"
#include "web/html.hpp"

namespace kernelwatch::web {

using namespace detail;
using core::ErrorCode;

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
    const auto parsed = core::parse_key_state(state);
    if (!parsed) return core::fail(ErrorCode::InvalidArgument, "state: " + parsed.error().message);
    out.state = *parsed;
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
                     "</span></a></td><td>" + state_badge(row.standing.state);
  if (!row.alert_id.empty()) {
    html += " <a class=\"alert-link\" href=\"" + escape(alert_href(row.alert_id, mode, 0)) +
            "\">alert</a>";
  }
  html += "</td><td class=\"num\">" +
          (row.last_run && row.last_run->median.count() > 0
               ? escape(core::format_latency(row.last_run->median))
               : std::string("&ndash;")) +
          "</td><td class=\"num\">";
  if (row.standing.change && row.standing.band) {
    html += "<span class=\"change\">" + escape(core::format_change(*row.standing.change)) +
            "</span> <span class=\"muted\">vs <span class=\"band\">" +
            band_text(*row.standing.band) + "</span></span>";
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

// Per host, per GPU: its runs, whether it is out of line with its siblings (an open GPU alert,
// firing or acknowledged) and a link to that alert. A host out of line is said on its heading.
std::string placed_section(const std::vector<PlacedRow>& placed, LinkMode mode) {
  const auto alert_cell = [&](const std::string& id, core::AlertState state) {
    return alert_state_badge(state) + " <a class=\"alert-link\" href=\"" +
           escape(alert_href(id, mode, 0)) + "\">alert</a>";
  };
  std::string html = "<section id=\"gpus\"><h2>Hosts and GPUs</h2>";
  std::string host;
  bool table_open = false;
  for (const auto& row : placed) {
    const auto& p = row.placement;
    if (!table_open || p.host != host) {
      if (table_open) html += "</tbody></table></div>";
      host = p.host;
      html += "<h3 class=\"host\" data-host=\"" + escape(host) + "\">" +
              (host.empty() ? std::string("host not named") : "host " + escape(host));
      if (!row.host_alert_id.empty()) {
        html += " <span class=\"muted\">out of line with its sibling hosts</span> " +
                alert_cell(row.host_alert_id, row.host_alert_state);
      }
      html +=
          "</h3><div class=\"scroll\"><table class=\"gpus\"><thead><tr><th>GPU</th><th>UUID</th>"
          "<th>PCIe bus</th><th>runs</th><th>last run</th><th>against its siblings</th></tr>"
          "</thead><tbody>";
      table_open = true;
    }
    const std::string state =
        row.alert_id.empty() ? "in_line" : std::string(core::to_string(row.alert_state));
    html += "<tr class=\"gpu\" data-host=\"" + escape(p.host) + "\" data-gpu=\"" +
            escape(p.unit()) + "\" data-state=\"" + state + "\"><td>" +
            (p.gpu.empty() ? std::string("&ndash;") : escape(p.gpu)) + "</td><td>" +
            escape(p.gpu_uuid) + "</td><td>" + escape(p.pci_bus_id) + "</td><td class=\"num\">" +
            std::to_string(row.runs) + "</td><td>" + escape(format_time(row.last_run)) +
            "</td><td>";
    if (row.alert_id.empty()) {
      html += "in line";
    } else {
      html += "<span title=\"" + escape(row.alert_text) + "\">out of line</span> " +
              alert_cell(row.alert_id, row.alert_state);
    }
    html += "</td></tr>";
  }
  if (table_open) html += "</tbody></table></div>";
  return html + "</section>";
}

bool open_first(const KeyRow& a, const KeyRow& b) {
  if (a.standing.state != b.standing.state) return a.standing.state < b.standing.state;
  return a.key.display() < b.key.display();
}

// How many keys and open alerts; the filters (served) or what a static report shows.
std::string counts_section(const std::vector<KeyRow>& rows, const OverviewQuery& query,
                           LinkMode mode) {
  std::set<std::string> environments;
  std::set<std::string> benchmarks;
  std::set<std::string> providers;
  for (const auto& row : rows) {
    environments.insert(row.key.environment);
    benchmarks.insert(row.key.benchmark);
    providers.insert(row.key.provider);
  }
  std::string html;
  std::size_t firing = 0;
  for (const auto& row : rows) firing += row.alert_id.empty() ? 0 : 1;
  html += "<section class=\"counts\"><p><strong>" + std::to_string(rows.size()) +
          "</strong> keys, <strong>" + std::to_string(firing) + "</strong> with an open alert.</p>";
  if (mode == LinkMode::Served) {
    html += "<form class=\"filters\" method=\"get\" action=\"/\">" +
            select("environment", "environment", environments, query.environment) +
            select("benchmark", "benchmark", benchmarks, query.benchmark) +
            select("provider", "provider", providers, query.provider);
    html += "<label>state <select name=\"state\"><option value=\"\">all</option>";
    for (const auto s : core::kKeyStates) {
      const std::string name(core::to_string(s));
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

  return html;
}

// The shown keys with an open alert or a breach, worst first (the first page only).
std::string open_section(const std::vector<const KeyRow*>& shown, LinkMode mode) {
  std::string html;
  // Open alerts first.
  std::vector<const KeyRow*> open;
  for (const auto* row : shown) {
    if (core::is_problem(row->standing.state)) open.push_back(row);
  }
  std::sort(open.begin(), open.end(),
            [](const KeyRow* a, const KeyRow* b) { return open_first(*a, *b); });
  if (!open.empty()) {
    html += "<section id=\"open\"><h2>Open alerts and breaches (" + std::to_string(open.size()) +
            ")</h2><div class=\"scroll\"><table class=\"keys open\"><thead><tr><th>environment "
            "/ benchmark</th>" +
            std::string(kKeyTableHead).substr(11);
    html.resize(html.size() - std::string("</tr></thead>").size());
    html += "</tr></thead><tbody>";
    const std::size_t limit = std::min<std::size_t>(open.size(), kOverviewPageSize);
    for (std::size_t i = 0; i < limit; ++i) {
      const auto& row = *open[i];
      html += "<tr class=\"key\" data-key=\"" + escape(key_ref(row.key)) + "\" data-state=\"" +
              std::string(core::to_string(row.standing.state)) + "\"><td>" +
              escape(row.key.environment) + "<br>" + escape(row.key.benchmark) + "</td>" +
              key_cells(row, mode) + "</tr>";
    }
    html += "</tbody></table></div></section>";
  }

  return html;
}

// The shown keys of one page, a table per environment and benchmark, and the page links.
std::string keys_section(std::vector<const KeyRow*> shown, const OverviewQuery& query,
                         LinkMode mode) {
  std::string html;
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
    html += "<tr class=\"key\" data-key=\"" + escape(key_ref(row.key)) + "\" data-state=\"" +
            std::string(core::to_string(row.standing.state)) + "\">" + key_cells(row, mode) +
            "</tr>";
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
  return html;
}

}  // namespace

std::string render_overview(const std::vector<KeyRow>& rows, const OverviewQuery& query,
                            const DaemonStatus* status, LinkMode mode,
                            const std::vector<PlacedRow>& placed) {
  std::vector<const KeyRow*> shown;
  for (const auto& row : rows) {
    if ((query.environment.empty() || row.key.environment == query.environment) &&
        (query.benchmark.empty() || row.key.benchmark == query.benchmark) &&
        (query.provider.empty() || row.key.provider == query.provider) &&
        (!query.state || row.standing.state == *query.state)) {
      shown.push_back(&row);
    }
  }
  std::string html = head("overview", mode, 0);
  html += "<h1>Overview</h1><div class=\"overview-top\">";
  if (status != nullptr) html += status_box(*status);
  html += counts_section(rows, query, mode);
  if (query.page == 1) html += open_section(shown, mode);
  // Shown when the labels tell something: a GPU, or more than one host (a daemon's own runs on a
  // CPU name only its host).
  const bool gpus_named = std::any_of(
      placed.begin(), placed.end(), [](const PlacedRow& r) { return !r.placement.unit().empty(); });
  const bool hosts =
      !placed.empty() && placed.front().placement.host != placed.back().placement.host;
  if (query.page == 1 && (gpus_named || hosts)) html += placed_section(placed, mode);

  html += keys_section(std::move(shown), query, mode);
  return html + foot(mode);
}

}  // namespace kernelwatch::web
