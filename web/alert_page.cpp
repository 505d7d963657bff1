// An alert's page: what fired, against which band, the runs around it, the notifications sent,
// and the acknowledge / rebaseline form.
#include <algorithm>
#include <set>

#include "web/detail/page_parts.hpp"
#include "web/html.hpp"

namespace kernelwatch::web {

using namespace detail;

// ---- alert page ----

namespace {

// What fired: the key, the change against its band, onset, firing run, attribution, storage.
std::string what_fired(const AlertView& view) {
  const auto& a = view.alert;
  std::string html;
  html +=
      "<section id=\"what\"><h2>What fired</h2><dl class=\"facts\"><dt>key</dt><dd>" +
      escape(a.key.display()) + "</dd><dt>direction</dt><dd>" + direction_word(a.direction) +
      "</dd><dt>change</dt><dd class=\"change\">" + escape(core::format_change(a.relative_change)) +
      " against the band centre " + escape(core::format_latency(a.band.center)) +
      "</dd><dt>band</dt><dd class=\"alert-band\">" + band_text(a.band) + " from " +
      std::to_string(a.baseline_runs) + " baseline runs</dd><dt>onset</dt><dd>" +
      escape(format_time(a.onset.observed_at)) + " run " + escape(a.onset.external_id) +
      ", median " + escape(core::format_latency(a.onset.median)) + "</dd><dt>fired at</dt><dd>" +
      escape(format_time(a.fired.observed_at)) + " run " + escape(a.fired.external_id) +
      ", median " + escape(core::format_latency(a.fired.median)) + "</dd>";
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

  return html;
}

// An incident's members, each its key's step with its own change: what the one notification
// listed.
std::string members_section(const core::Alert& a, LinkMode mode) {
  std::string html;
  html += "<section id=\"members\"><h2>Members (" + std::to_string(a.members.size()) +
          ")</h2><div class=\"scroll\"><table class=\"alerts\"><thead><tr><th>key</th>"
          "<th>direction</th><th>change</th><th>band</th><th>state</th></tr></thead><tbody>";
  for (const auto& m : a.members) {
    html += "<tr><td><a href=\"" + escape(key_href(key_ref(m.key), mode, 1)) + "\">" +
            escape(m.key.display()) + "</a></td><td>" + direction_word(m.direction) +
            "</td><td class=\"num\">" + escape(core::format_change(m.relative_change)) +
            "</td><td class=\"num\">" + band_text(m.band) + "</td><td>" +
            alert_state_badge(m.state) + "</td></tr>";
  }
  html += "</tbody></table></div></section>";
  return html;
}

// The history around the alert: its baseline before the onset and a few runs after.
std::string history_section(const AlertView& view, LinkMode mode, const std::string& id) {
  const auto& a = view.alert;
  const auto& runs = view.replay->runs;
  std::size_t onset = runs.size();
  std::size_t fired = runs.size();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].run.external_id == a.onset.external_id && onset == runs.size()) onset = i;
    if (runs[i].run.external_id == a.fired.external_id) fired = i;
  }
  if (onset == runs.size()) onset = fired;
  if (onset == runs.size()) return "";
  std::vector<const ReplayedRun*> baseline;
  for (std::size_t i = onset; i-- > 0 && baseline.size() < a.baseline_runs;) {
    if (runs[i].role == detectors::RunRole::Accepted) baseline.push_back(&runs[i]);
  }
  const std::size_t first = onset > a.baseline_runs + 10 ? onset - a.baseline_runs - 10 : 0;
  const std::size_t last = std::min(runs.size(), std::max(fired, onset) + 15);
  std::vector<const ReplayedRun*> window;
  for (std::size_t i = first; i < last; ++i) window.push_back(&runs[i]);
  return "<section id=\"history\"><h2>The band and the runs around it</h2><figure "
         "class=\"chart-box\">" +
         chart_svg(window, with_stored(view.replay->alerts, {}, &a), Scale::Linear, mode, 1, id,
                   "runs around the alert") +
         "<figcaption>" + std::to_string(window.size()) +
         " runs around the onset; the alert's own flag is bold.</figcaption>" + legend() +
         "</figure><h3>Baseline runs (" + std::to_string(baseline.size()) + ", newest first)</h3>" +
         run_table(baseline, 0, baseline.size()) + "</section>";
}

std::string notifications_section(const AlertView& view) {
  std::string html;
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

  return html;
}

// The acknowledge / rebaseline form (served), or how to do it (static).
std::string act_section(const AlertView& view, LinkMode mode, const std::string& id) {
  const auto& a = view.alert;
  std::string html;
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
  return html;
}

}  // namespace

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
  html += what_fired(view);
  if (core::is_incident(a)) html += members_section(a, mode);
  if (view.replay) html += history_section(view, mode, id);
  html += notifications_section(view) + act_section(view, mode, id);
  return html + foot(mode);
}

}  // namespace kernelwatch::web
