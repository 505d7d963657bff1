// A key's page: its history chart, its alerts and its runs.
#include <algorithm>
#include <set>

#include "web/detail/page_parts.hpp"
#include "web/html.hpp"

namespace kernelwatch::web {

using namespace detail;
using core::ErrorCode;

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
    // A step inside an incident links to the incident: that is what was notified and acted on.
    const bool member = core::is_incident_member(a);
    return "<tr><td><a href=\"" +
           escape(alert_href(member ? a.incident.long_form() : alert_page_id(a), mode, depth)) +
           "\">" +
           escape(format_time(a.onset.observed_at.time_since_epoch().count() != 0
                                  ? a.onset.observed_at
                                  : a.fired.observed_at)) +
           "</a></td><td>" + escape(core::to_string(a.kind)) + (member ? " (in an incident)" : "") +
           "</td><td>" + direction_word(a.direction) + "</td><td class=\"num\">" +
           escape(core::format_change(a.relative_change)) + "</td><td class=\"num\">" +
           band_text(a.band) + "</td><td>" + alert_state_badge(a.state) + "</td><td>" + source +
           "</td></tr>";
  };
  for (const auto& alert : alerts) {
    const bool kept =
        stored_ids.count(alert_page_id(alert)) != 0 ||
        (core::is_incident_member(alert) && stored_ids.count(alert.incident.long_form()) != 0);
    html += row_of(alert, kept ? "stored by the daemon" : "replay of the history");
  }
  return html + "</tbody></table></div>";
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

}  // namespace kernelwatch::web
