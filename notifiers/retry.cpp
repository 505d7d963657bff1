#include "notifiers/retry.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

namespace kernelwatch::notifiers {
namespace {

using std::chrono::milliseconds;

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<int> month_index(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (std::size_t i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == name) return static_cast<int>(i) + 1;
  }
  return std::nullopt;
}

std::optional<int> number(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<core::Timestamp> make_time(int year, int month, int day, std::string_view hms) {
  if (hms.size() != 8 || hms[2] != ':' || hms[5] != ':') return std::nullopt;
  auto h = number(hms.substr(0, 2));
  auto m = number(hms.substr(3, 2));
  auto s = number(hms.substr(6, 2));
  if (!h || !m || !s || *h > 23 || *m > 59 || *s > 60) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return std::nullopt;
  return core::Timestamp(std::chrono::sys_days(date)) + std::chrono::hours(*h) +
         std::chrono::minutes(*m) + std::chrono::seconds(*s);
}

}  // namespace

std::optional<core::Timestamp> parse_http_date(std::string_view value) {
  value = trim(value);
  // Split on spaces (asctime pads single-digit days with two spaces).
  std::array<std::string_view, 6> parts{};
  std::size_t count = 0;
  while (!value.empty() && count < parts.size()) {
    const auto space = value.find(' ');
    parts[count++] = value.substr(0, space);
    if (space == std::string_view::npos) break;
    value = trim(value.substr(space));
  }
  if (count == 6 && parts[5] == "GMT") {  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    auto day = number(parts[1]);
    auto month = month_index(parts[2]);
    auto year = number(parts[3]);
    if (!day || !month || !year) return std::nullopt;
    return make_time(*year, *month, *day, parts[4]);
  }
  if (count == 4 && parts[3] == "GMT") {  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
    const auto d = parts[1];
    if (d.size() != 9 || d[2] != '-' || d[6] != '-') return std::nullopt;
    auto day = number(d.substr(0, 2));
    auto month = month_index(d.substr(3, 3));
    auto year = number(d.substr(7, 2));
    if (!day || !month || !year) return std::nullopt;
    return make_time(*year + (*year < 70 ? 2000 : 1900), *month, *day, parts[2]);
  }
  if (count == 5) {  // asctime: Sun Nov  6 08:49:37 1994
    auto month = month_index(parts[1]);
    auto day = number(parts[2]);
    auto year = number(parts[4]);
    if (!day || !month || !year) return std::nullopt;
    return make_time(*year, *month, *day, parts[3]);
  }
  return std::nullopt;
}

std::optional<milliseconds> parse_retry_after(std::string_view value, core::Timestamp now) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    long long seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec != std::errc()) return std::nullopt;
    // Anything over a year is as good as never; keep the arithmetic far from overflow.
    seconds = std::min<long long>(seconds, 366LL * 24 * 3600);
    return std::chrono::seconds(seconds);
  }
  auto date = parse_http_date(value);
  if (!date) return std::nullopt;
  if (*date <= now) return milliseconds(0);
  return std::chrono::ceil<milliseconds>(*date - now);
}

Classification classify(const Integration& integration, const HttpResponse& response,
                        core::Timestamp now) {
  Classification out;
  out.reason = "HTTP " + std::to_string(response.status);
  if (const std::string words = integration.permanent_body(response.body); !words.empty()) {
    out.verdict = Verdict::Permanent;
    out.reason += " " + words;
    return out;
  }
  if (response.status >= 200 && response.status < 300) {
    out.verdict = Verdict::Delivered;
    return out;
  }
  if (!response.retry_after.empty()) {
    out.retry_after = parse_retry_after(response.retry_after, now);
  }
  if (response.status == 408 || response.status == 429 || response.status >= 500) {
    out.verdict = Verdict::Transient;
  } else {
    out.verdict = Verdict::Permanent;
    if (response.status >= 300 && response.status < 400)
      out.reason += " (redirects are not followed)";
    if (const std::string hint = integration.permanent_hint(response.status); !hint.empty()) {
      out.reason += " (" + hint + ")";
    }
  }
  return out;
}

milliseconds backoff_delay(const Backoff& backoff, std::int64_t failed_attempts,
                           std::mt19937_64& rng) {
  const std::int64_t exponent = std::clamp<std::int64_t>(failed_attempts - 1, 0, 40);
  const double raw = static_cast<double>(backoff.base.count()) * std::pow(2.0, exponent);
  const auto delay =
      static_cast<std::int64_t>(std::min(raw, static_cast<double>(backoff.cap.count())));
  std::uniform_int_distribution<std::int64_t> jitter(delay / 2, delay);
  return milliseconds(jitter(rng));
}

Decision decide(const Backoff& backoff, const Classification& classification,
                std::int64_t failed_attempts, core::Timestamp created_at, core::Timestamp now,
                std::mt19937_64& rng) {
  Decision out;
  out.at = now;
  out.message = classification.reason;
  if (classification.verdict == Verdict::Delivered) {
    out.kind = Decision::Kind::Delivered;
    return out;
  }
  if (classification.verdict == Verdict::Permanent) {
    out.kind = Decision::Kind::Dead;
    out.message = "permanent failure: " + classification.reason;
    return out;
  }
  milliseconds delay = backoff_delay(backoff, failed_attempts, rng);
  if (classification.retry_after) delay = std::max(*classification.retry_after, backoff.base);
  const core::Timestamp next = now + delay;
  if (next > created_at + backoff.max_age) {
    out.kind = Decision::Kind::Dead;
    out.gave_up = true;
    out.message = "gave up after " + std::to_string(failed_attempts) +
                  " attempts (next attempt would pass the maximum age): " + classification.reason;
    return out;
  }
  out.kind = Decision::Kind::RetryAt;
  out.at = next;
  return out;
}

}  // namespace kernelwatch::notifiers
