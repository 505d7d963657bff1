// The words every receiver type uses for an alert: its headline, key line, severity, band, the
// one-line summary of a notification and the status page link. Plain C++.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/alert.hpp"
#include "notifiers/notification.hpp"
#include "notifiers/payloads.hpp"

namespace kernelwatch::notifiers {

// Cuts at a UTF-8 boundary and marks the cut: at most `limit` bytes.
[[nodiscard]] std::string truncate_utf8(std::string text, std::size_t limit);
[[nodiscard]] std::string trim_slash(std::string url);
// The alert's page under options.public_url; "" without one.
[[nodiscard]] std::string alert_link(const FormatOptions& options, const NotifiedAlert& n);
[[nodiscard]] bool resolved(const NotifiedAlert& n);
// What explains the change: the attribution, or for a failed run its reason.
[[nodiscard]] std::string alert_note(const core::Alert& a);
// "Regression (kernel step)", "Incident", "Resolved", ...
[[nodiscard]] std::string headline(const NotifiedAlert& n);
// The alert's own severity (critical, warning, info), whatever the notice says of it.
[[nodiscard]] std::string alert_severity(const core::Alert& a);
// This notice's: a resolve is info.
[[nodiscard]] std::string notice_severity(const NotifiedAlert& n);
// "benchmark · provider · workload · environment", an incident's keys, or a GPU's placement.
[[nodiscard]] std::string key_line(const core::Alert& a);
// "2 regressions, 1 resolved".
[[nodiscard]] std::string summary_line(const Notification& n);
// "9.6 us – 9.9 us".
[[nodiscard]] std::string band_text(const core::Alert& a);

}  // namespace kernelwatch::notifiers
