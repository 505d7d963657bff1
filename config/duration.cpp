#include "config/duration.hpp"

#include <array>
#include <cstdint>
#include <limits>

namespace kernelwatch::config {
namespace {

using core::ErrorCode;

struct Unit {
  std::string_view suffix;
  std::int64_t milliseconds;
};

// Longest suffix first so that "ms" is not read as "m" followed by junk.
constexpr std::array<Unit, 5> kUnits{{
    {"ms", 1},
    {"s", 1'000},
    {"m", 60'000},
    {"h", 3'600'000},
    {"d", 86'400'000},
}};

constexpr int kMaxFractionDigits = 9;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

core::Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return core::fail(ErrorCode::ParseError, "\"" + std::string(text) +
                                                 "\" is not a duration like \"15m\" or \"30s\"" +
                                                 std::string(why));
  };
  std::size_t i = 0;
  std::int64_t whole = 0;
  const std::size_t whole_start = i;
  bool overflow = false;
  while (i < text.size() && is_digit(text[i])) {
    const int digit = text[i] - '0';
    if (whole > (std::numeric_limits<std::int64_t>::max() - digit) / 10) overflow = true;
    if (!overflow) whole = whole * 10 + digit;
    ++i;
  }
  if (i == whole_start) return bad("");
  std::int64_t fraction = 0;
  int fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && is_digit(text[i])) {
      if (fraction_digits == kMaxFractionDigits) return bad(" (at most 9 decimal places)");
      fraction = fraction * 10 + (text[i] - '0');
      ++fraction_digits;
      ++i;
    }
    if (fraction_digits == 0) return bad("");
  }
  const std::string_view suffix = text.substr(i);
  const Unit* unit = nullptr;
  for (const Unit& candidate : kUnits) {
    if (suffix == candidate.suffix) {
      unit = &candidate;
      break;
    }
  }
  if (unit == nullptr) return bad("");

  // fraction < 10^9 and a unit is at most 8.64e7 ms, so the product fits in 64 bits.
  std::int64_t scale = 1;
  for (int d = 0; d < fraction_digits; ++d) scale *= 10;
  const std::int64_t fraction_ms_scaled = fraction * unit->milliseconds;
  if (fraction_ms_scaled % scale != 0) return bad(" (not a whole number of milliseconds)");
  const std::int64_t fraction_ms = fraction_ms_scaled / scale;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (overflow || whole > (kMax - fraction_ms) / unit->milliseconds) {
    return core::fail(ErrorCode::ParseError,
                      "\"" + std::string(text) + "\" is too long a duration");
  }
  return std::chrono::milliseconds(whole * unit->milliseconds + fraction_ms);
}

std::string format_duration(std::chrono::milliseconds duration) {
  const std::int64_t ms = duration.count();
  if (ms == 0) return "0s";
  for (auto it = kUnits.rbegin(); it != kUnits.rend(); ++it) {
    if (ms % it->milliseconds == 0) {
      return std::to_string(ms / it->milliseconds) + std::string(it->suffix);
    }
  }
  return std::to_string(ms) + "ms";
}

}  // namespace kernelwatch::config
