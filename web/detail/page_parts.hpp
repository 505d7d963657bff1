// What the dashboard's page files share (web/overview_page.cpp, key_page.cpp, alert_page.cpp):
// the page frame, the badges and number forms, query parsing helpers, and the history chart and
// run table the key and alert pages draw. Private to web/.
#pragma once

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/alert.hpp"
#include "core/error.hpp"
#include "web/model.hpp"
#include "web/pages.hpp"

namespace kernelwatch::web::detail {

// ---- the frame and the words (page_parts.cpp) ----

std::string num(double value);  // "12.3": SVG coordinates
std::string latency(std::optional<std::chrono::nanoseconds> value);  // escaped, "&ndash;" if none
std::string root(LinkMode mode, int depth);  // the site's root from a page `depth` folders down
std::string head(std::string_view title, LinkMode mode, int depth);
std::string foot(LinkMode mode);
// State labels carry a symbol and a word: readable without colour.
std::string state_badge(core::KeyState state);
std::string alert_state_badge(core::AlertState state);
std::string direction_word(core::Direction d);
std::string band_text(const core::Band& band);
core::Result<std::size_t> parse_count(const std::string& name, const std::string& text,
                                      std::size_t low, std::size_t high);
core::Result<void> only_known(const Query& query, std::initializer_list<std::string_view> names);
// A date (YYYY-MM-DD, the day's start in UTC) or an RFC 3339 instant.
core::Result<core::Timestamp> parse_day_or_time(const std::string& name, const std::string& text,
                                                bool end_of_day);

// ---- the history chart and the run table (chart.cpp) ----

// The chart: per-run band (shaded, dashed edges), p20-p80 spread, median markers by verdict
// (shape carries the verdict), segment starts, rebaselines, attribution ticks, alerts.
std::string chart_svg(const std::vector<const ReplayedRun*>& runs,
                      const std::vector<core::Alert>& alerts, Scale scale, LinkMode mode, int depth,
                      std::string_view highlight, std::string_view label);
std::string legend();
std::string run_table(const std::vector<const ReplayedRun*>& newest_first, std::size_t begin,
                      std::size_t end);
// The replay's alerts and the stored ones it did not raise: both are marked on a chart.
std::vector<core::Alert> with_stored(const std::vector<core::Alert>& replayed,
                                     const std::vector<storage::AlertRow>& stored,
                                     const core::Alert* also = nullptr);

}  // namespace kernelwatch::web::detail
