// HTML building blocks for the dashboard: the one escaping function every datum goes through
// (text and attribute values alike), URL components, and the number and time formats the pages
// show. Pure; standard library and core/ only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/time.hpp"

namespace kernelwatch::web {

// Escapes & < > " ' so the result is safe as element text and inside a quoted attribute value.
// Every datum a page shows (labels, ids, messages, numbers) goes through this one function.
[[nodiscard]] std::string escape(std::string_view text);

// Percent-encodes everything but unreserved characters (RFC 3986): a path segment or a query
// value. The result still goes through escape() when written into an attribute.
[[nodiscard]] std::string url_component(std::string_view text);

// "2025-03-04 12:30 UTC" (minutes) for tables and labels.
[[nodiscard]] std::string format_time(core::Timestamp t);

}  // namespace kernelwatch::web
