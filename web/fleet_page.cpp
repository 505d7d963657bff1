// The fleet page (served at /fleet): every host of the PostgreSQL database the daemon shares
// with other hosts' daemons, one row each, problems first (storage/fleet.hpp).
#include <string>

#include "web/detail/page_parts.hpp"
#include "web/html.hpp"
#include "web/pages.hpp"

namespace kernelwatch::web {
namespace {

using detail::alert_state_badge;
using detail::direction_word;
using detail::foot;
using detail::head;

std::string open_alerts_cell(const storage::FleetHost& host) {
  if (host.open.empty()) return "&ndash;";
  std::string html = "<ul class=\"fleet-alerts\">";
  for (const auto& row : host.open) {
    const auto& a = row.alert;
    // Another host's alert has its page on that host's dashboard: named here, not linked.
    html += "<li>" + alert_state_badge(a.state) + " <code>" + escape(a.id.short_form()) +
            "</code> " + escape(direction_word(a.direction)) + " " +
            escape(a.key.benchmark.empty()
                       ? std::string(core::to_string(a.kind))
                       : a.key.benchmark + " " + a.key.provider + " " + a.key.workload) +
            "</li>";
  }
  const auto total = host.firing + host.acknowledged;
  if (total > static_cast<std::int64_t>(host.open.size())) {
    html += "<li class=\"muted\">and " +
            std::to_string(total - static_cast<std::int64_t>(host.open.size())) + " more</li>";
  }
  return html + "</ul>";
}

}  // namespace

std::string render_fleet(const std::vector<storage::FleetHost>& hosts, std::string_view database,
                         bool postgresql) {
  std::string html = head("fleet", LinkMode::Served, 0);
  html += "<h1>Fleet</h1>";
  if (!postgresql) {
    html +=
        "<p>This daemon's database is a SQLite file: it holds this host's runs only. The hosts of "
        "a fleet share one PostgreSQL database, each in its own schema (<code>storage.schema</code>"
        "; docs/FLEET.md), and each host's dashboard then lists them all here.</p>";
    return html + foot(LinkMode::Served);
  }
  html += "<p>Every host's daemon in <code>" + escape(database) + "</code>, one schema each, " +
          "problems first: hosts that cannot be read, then by firing and acknowledged alerts, then "
          "the host whose newest run is oldest.</p>";
  html +=
      "<div class=\"scroll\"><table class=\"fleet\"><thead><tr><th>host (schema)</th><th>keys</th>"
      "<th>newest run</th><th>firing</th><th>acknowledged</th><th>open alerts</th></tr></thead>"
      "<tbody>";
  for (const auto& host : hosts) {
    const std::string state = !host.unreadable.empty() ? "unreadable"
                              : host.firing > 0        ? "firing"
                              : host.acknowledged > 0  ? "acknowledged"
                                                       : "quiet";
    html += "<tr class=\"fleet-host\" data-schema=\"" + escape(host.schema) + "\" data-state=\"" +
            state + "\"><td>" + escape(host.schema) +
            (host.own ? " <span class=\"muted\">(this daemon)</span>" : "") + "</td>";
    if (!host.unreadable.empty()) {
      html += "<td colspan=\"5\" class=\"error\">cannot be read: " + escape(host.unreadable) +
              "</td></tr>";
      continue;
    }
    html += "<td class=\"num\">" + std::to_string(host.keys) + "</td><td>" +
            (host.newest_run ? escape(format_time(*host.newest_run)) : std::string("no run yet")) +
            "</td><td class=\"num\">" + std::to_string(host.firing) + "</td><td class=\"num\">" +
            std::to_string(host.acknowledged) + "</td><td>" + open_alerts_cell(host) + "</td></tr>";
  }
  if (hosts.empty()) {
    html += "<tr><td colspan=\"6\">no schema of this database holds kernelwatch's tables</td></tr>";
  }
  html += "</tbody></table></div>";
  return html + foot(LinkMode::Served);
}

}  // namespace kernelwatch::web
