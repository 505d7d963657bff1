#include "notifiers/alert_text.hpp"

namespace kernelwatch::notifiers {

// Cuts at a UTF-8 boundary and marks the cut, so the result is at most `limit` bytes (Slack
// counts characters, which are never more than bytes).
std::string truncate_utf8(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  const std::string_view ellipsis = "…";
  std::size_t cut = limit - ellipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  text += ellipsis;
  return text;
}

std::string trim_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string alert_link(const FormatOptions& options, const NotifiedAlert& n) {
  if (options.public_url.empty()) return {};
  return trim_slash(options.public_url) + "/alerts/" + n.alert.id.short_form();
}

bool resolved(const NotifiedAlert& n) {
  return n.notice == Notice::Resolved;
}

// What explains the change: the attribution, or for a failed run its reason.
std::string alert_note(const core::Alert& a) {
  if (a.kind == AlertKind::Failed) return a.explanation;
  return a.attribution.empty() ? std::string() : core::describe(a.attribution);
}

// What kind of event this is, in words people scan for.
std::string headline(const NotifiedAlert& n) {
  const core::Alert& a = n.alert;
  if (resolved(n)) return "Resolved";
  switch (a.kind) {
    case AlertKind::Environment:
      return "Incident";
    case AlertKind::Failed:
      return "Failed run";
    case AlertKind::Drift:
      return a.direction == Direction::Regression ? "Regression (drift)" : "Improvement (drift)";
    case AlertKind::Step:
      break;
  }
  return a.direction == Direction::Regression ? "Regression (kernel step)"
                                              : "Improvement (kernel step)";
}

// The severity of the alert itself, whatever this notice says of it: Alertmanager identifies an
// alert by its label set, so a label that changed at the resolve would resolve a different alert
// (and leave the firing one active until it expired).
std::string alert_severity(const core::Alert& a) {
  if (a.kind == AlertKind::Environment) return "warning";
  if (a.kind == AlertKind::Failed) return "critical";
  return a.direction == Direction::Regression ? "critical" : "info";
}

// The severity of this notice (Slack, webhook): a resolve is news of the good kind.
std::string notice_severity(const NotifiedAlert& n) {
  return resolved(n) ? "info" : alert_severity(n.alert);
}

// An incident names its environment and its member keys; an alert its key.
std::string key_line(const core::Alert& a) {
  // A GPU or a host out of line with its siblings (or its fleet) has no key: where it ran is what
  // it is about (and its member keys, when the fleet decided it).
  const bool unit = !a.placement.empty() && a.key.benchmark.empty();
  if (unit && a.members.empty()) return a.placement.describe() + " · " + a.key.environment;
  if (a.members.empty()) {
    const auto& k = a.key;
    return k.benchmark + " · " + k.provider + " · " + k.workload + " · " + k.environment;
  }
  std::string line = (unit ? a.placement.describe() + " · " : std::string()) + a.key.environment +
                     ": " + std::to_string(a.members.size()) + " keys";
  constexpr std::size_t kNamed = 5;
  for (std::size_t i = 0; i < a.members.size() && i < kNamed; ++i) {
    const auto& k = a.members[i].key;
    line += (i == 0 ? ": " : ", ") + k.benchmark + " " + k.provider + " " + k.workload;
  }
  if (a.members.size() > kNamed) line += ", …";
  return line;
}

std::string summary_line(const Notification& n) {
  std::size_t regressions = 0, improvements = 0, environment = 0, failed = 0, resolved_count = 0;
  for (const auto& item : n.alerts) {
    const core::Alert& a = item.alert;
    if (resolved(item)) {
      ++resolved_count;
    } else if (a.kind == AlertKind::Environment) {
      ++environment;
    } else if (a.kind == AlertKind::Failed) {
      ++failed;
    } else if (a.direction == Direction::Regression) {
      ++regressions;
    } else {
      ++improvements;
    }
  }
  std::string out;
  auto add = [&](std::size_t count, const char* one, const char* many) {
    if (count == 0) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(count) + " " + (count == 1 ? one : many);
  };
  add(regressions, "regression", "regressions");
  add(environment, "incident", "incidents");
  add(failed, "failed run", "failed runs");
  add(improvements, "improvement", "improvements");
  add(resolved_count, "resolved", "resolved");
  if (out.empty()) out = "no alerts";
  return out;
}

std::string band_text(const core::Alert& a) {
  return core::format_latency(a.band.lower) + " – " + core::format_latency(a.band.upper);
}

}  // namespace kernelwatch::notifiers
