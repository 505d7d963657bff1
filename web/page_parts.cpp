// The dashboard's page frame, badges, number forms, query helpers, links and error pages.
#include "web/detail/page_parts.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "core/digest.hpp"
#include "web/html.hpp"

#ifndef KERNELWATCH_VERSION
#define KERNELWATCH_VERSION "0.0.0-dev"
#endif

namespace kernelwatch::web {
namespace detail {

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
      "\">kernelwatch</a><span class=\"sub\">benchmark history and alerts</span>";
  // The daemon's pages link its fleet page (every host of a shared PostgreSQL database).
  if (mode == LinkMode::Served)
    html += "<a class=\"nav\" href=\"" + escape(r) + "fleet\">fleet</a>";
  html += "</header><main>";
  return html;
}

std::string foot(LinkMode mode) {
  return std::string("</main><footer>kernelwatch ") + KERNELWATCH_VERSION +
         (mode == LinkMode::Static ? " &middot; static report" : "") +
         "</footer><div id=\"tip\" class=\"tip\" role=\"tooltip\" hidden></div></body></html>\n";
}

std::string state_badge(core::KeyState state) {
  const char* symbol = "";
  switch (state) {
    case core::KeyState::Firing:
      symbol = "&#9650;";
      break;
    case core::KeyState::Failing:
      symbol = "&#10007;";
      break;
    case core::KeyState::Incident:
      symbol = "&#9674;";
      break;
    case core::KeyState::Breached:
      symbol = "?";
      break;
    case core::KeyState::Acknowledged:
      symbol = "&#10003;";
      break;
    case core::KeyState::Inconclusive:
      symbol = "&#8856;";
      break;
    case core::KeyState::InsufficientData:
      symbol = "&#8230;";
      break;
    case core::KeyState::InBand:
      symbol = "&#9679;";
      break;
  }
  const std::string name(core::to_string(state));
  return "<span class=\"badge st-" + name + "\">" + symbol + " " + name + "</span>";
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

}  // namespace detail

using namespace detail;

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
