// The key's history chart (inline SVG) and run table, drawn by the key and alert pages.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "web/detail/page_parts.hpp"
#include "web/html.hpp"

namespace kernelwatch::web::detail {
namespace {

using std::chrono::nanoseconds;

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
            core::format_change(r.verdict.relative_change);
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

// The chart's frame for these runs: their medians, spreads and bands fill its height.
Chart fit(const std::vector<const ReplayedRun*>& runs, Scale scale) {
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
  return c;
}

std::string axes_svg(const Chart& c, const std::vector<const ReplayedRun*>& runs) {
  std::string svg;
  // Axes and grid.
  svg += "<g class=\"grid\">";
  for (int i = 0; i <= 4; ++i) {
    const double fv = c.f(c.lo) + (c.f(c.hi) - c.f(c.lo)) * i / 4.0;
    const double v = c.scale == Scale::Log ? std::pow(10.0, fv) : fv;
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
         "\" y=\"14\">median per run, " + std::string(c.scale == Scale::Log ? "log" : "linear") +
         " scale</text></g>";

  return svg;
}

std::string band_svg(const Chart& c, const std::vector<const ReplayedRun*>& runs) {
  std::string svg;
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
  return svg;
}

std::string spread_svg(const Chart& c, const std::vector<const ReplayedRun*>& runs) {
  std::string svg;
  // Spread p20-p80.
  std::string spread;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i]->run;
    if (run.p20 && run.p80 && run.p20->count() > 0) {
      spread += "M" + num(c.x(i)) + "," + num(c.y(*run.p80)) + "V" + num(c.y(*run.p20));
    }
  }
  if (!spread.empty()) svg += "<path class=\"spread\" d=\"" + spread + "\"/>";
  return svg;
}

std::string marks_svg(const Chart& c, const std::vector<const ReplayedRun*>& runs) {
  std::string svg;
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
  return svg;
}

std::string alerts_svg(const Chart& c, const std::vector<const ReplayedRun*>& runs,
                       const std::vector<core::Alert>& alerts, LinkMode mode, int depth,
                       std::string_view highlight, double r) {
  std::string svg;
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
                                                     core::format_change(alert.relative_change));
    const char* anchor = x < c.left + 70 ? "start" : x > c.width - c.right - 70 ? "end" : "middle";
    svg += "<a class=\"alert-mark" + std::string(imp ? " imp" : " reg") +
           (alert_page_id(alert) == highlight ? " current" : "") + "\" href=\"" +
           // A step inside an incident links to the incident (its page; what was notified).
           escape(alert_href(
               core::is_incident_member(alert) ? alert.incident.long_form() : alert_page_id(alert),
               mode, depth)) +
           "\" data-alert=\"" + escape(alert_page_id(alert)) + "\" data-fired=\"" +
           escape(alert.fired.external_id) + "\"><title>alert " + escape(alert_page_id(alert)) +
           ": " + escape(alert.explanation) + "</title><line x1=\"" + num(x) + "\" x2=\"" + num(x) +
           "\" y1=\"" + num(c.top - 26) + "\" y2=\"" + num(c.top + c.plot_h()) +
           "\"/><text text-anchor=\"" + anchor + "\" x=\"" + num(x) + "\" y=\"" + num(c.top - 28) +
           "\">" + escape(text) + "</text></a>";
    if (const auto fired = index.find(alert.fired.external_id);
        fired != index.end() && alert.fired.median.count() > 0) {
      svg += "<circle class=\"fire-ring\" cx=\"" + num(c.x(fired->second)) + "\" cy=\"" +
             num(c.y(alert.fired.median)) + "\" r=\"" + num(r + 4) + "\"/>";
    }
  }
  return svg;
}

std::string points_svg(const Chart& c, const std::vector<const ReplayedRun*>& runs, double r) {
  std::string svg;
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
  svg += "</g>";
  return svg;
}

}  // namespace

// The chart: per-run band (shaded, dashed edges), p20-p80 spread, median markers by verdict
// (shape carries the verdict), segment starts, rebaselines, attribution ticks, alerts.
std::string chart_svg(const std::vector<const ReplayedRun*>& runs,
                      const std::vector<core::Alert>& alerts, Scale scale, LinkMode mode, int depth,
                      std::string_view highlight, std::string_view label) {
  const Chart c = fit(runs, scale);
  const double r = runs.size() > 150 ? 2.6 : runs.size() > 60 ? 3.4 : 4.5;
  return "<svg class=\"chart\" viewBox=\"0 0 " + num(c.width) + " " + num(c.height) +
         "\" role=\"img\" aria-label=\"" + escape(label) +
         "\" preserveAspectRatio=\"xMidYMid meet\">" + axes_svg(c, runs) + band_svg(c, runs) +
         spread_svg(c, runs) + marks_svg(c, runs) +
         alerts_svg(c, runs, alerts, mode, depth, highlight, r) + points_svg(c, runs, r) + "</svg>";
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
        (r.verdict.has_band ? escape(core::format_change(r.verdict.relative_change))
                            : std::string("&ndash;")) +
        "</td><td>" + escape(notes) + "</td></tr>";
  }
  return html + "</tbody></table></div>";
}

// The replay's alerts and the stored ones it did not raise (a posted run the daemon judged
// alone, say): both are marked on a chart.
std::vector<core::Alert> with_stored(const std::vector<core::Alert>& replayed,
                                     const std::vector<storage::AlertRow>& stored,
                                     const core::Alert* also) {
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

}  // namespace kernelwatch::web::detail
