// The config parser's shared readers (config.cpp and detector_config.cpp): how a field's
// messages are worded, where secrets and relative paths come from, and the readers of counts,
// numbers and durations. Not part of the module's interface.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "config/duration.hpp"
#include "config/environment.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "runners/sources.hpp"

namespace kernelwatch::config::detail {

using core::ErrorCode;
using core::JsonField;
using core::Status;
using json = nlohmann::json;
using std::chrono::milliseconds;

inline bool looks_like_url(std::string_view text) {
  return text.find("://") != std::string_view::npos;
}

// A user-written value quoted for a message; values that might be secrets (URLs, long strings
// pasted into the wrong field) are not shown.
inline std::string shown(std::string_view text) {
  if (looks_like_url(text) || text.size() > 64) return "(value not shown)";
  return "\"" + std::string(text) + "\"";
}

// One parse: how its messages are worded (the file's name before every field's path, a wrong
// value invalid input, null a value) and where secrets and relative paths come from. Fields are
// read with core::JsonField; what the config adds to it are the readers below: unknown fields,
// ranges, durations and secrets.
class Reader {
 public:
  Reader(std::string_view source, const Environment& environment,
         const std::filesystem::path& base_dir, const runners::SourceCatalogue& sources)
      : errors_{std::string(source), ErrorCode::InvalidArgument, /*name_found=*/true,
                /*null_is_absent=*/false, /*whole_floats=*/false},
        environment_(environment),
        base_dir_(base_dir),
        sources_(sources) {}

  [[nodiscard]] JsonField root(const json& document) const {
    return JsonField(document, "", errors_);
  }

  [[nodiscard]] std::filesystem::path resolve(const std::string& path_text) const {
    const std::filesystem::path path(path_text);
    return path.is_absolute() ? path : (base_dir_ / path).lexically_normal();
  }

  [[nodiscard]] const Environment& environment() const { return environment_; }
  // The run sources an entry's `runner` names.
  [[nodiscard]] const runners::SourceCatalogue& sources() const { return sources_; }
  std::vector<std::string>& warnings() { return warnings_; }

 private:
  core::JsonErrors errors_;
  const Environment& environment_;
  std::filesystem::path base_dir_;
  const runners::SourceCatalogue& sources_;
  std::vector<std::string> warnings_;
};

// The field as an object whose every key is one of `allowed`.
inline Result<JsonField> object_of(const JsonField& field,
                                   const std::vector<std::string_view>& allowed,
                                   std::string_view what = "an object") {
  const JsonField object = KW_TRY(field.object(what));
  for (const std::string& key : object.keys()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      if (looks_like_url(key)) return object.error("unknown field (name not shown)");
      return object[key].error("unknown field");
    }
  }
  return object;
}

// The readers of optional settings: `out` keeps its default when the field is absent.

// An integer in [minimum, maximum].
inline Status read_count(const JsonField& field, std::size_t minimum, std::size_t maximum,
                         std::size_t& out) {
  if (!field.present()) return {};
  const auto out_of_range = [&] {
    return field.error(field.value().dump() + " is not between " + std::to_string(minimum) +
                       " and " + std::to_string(maximum));
  };
  // Above the 64-bit integers JsonField reads: still a count, only out of range.
  if (field.value().is_number_unsigned() &&
      field.value().get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return out_of_range();
  }
  const std::int64_t value = KW_TRY(field.integer());
  if (value < 0 || static_cast<std::uint64_t>(value) < minimum ||
      static_cast<std::uint64_t>(value) > maximum) {
    return out_of_range();
  }
  out = static_cast<std::size_t>(value);
  return {};
}

// Whether a number's lower bound is itself allowed.
enum class LowerBound { Closed, Open };

// A finite number in [minimum, maximum], or (minimum, maximum] when the lower bound is open.
inline Status read_number(const JsonField& field, double minimum, double maximum, LowerBound lower,
                          double& out) {
  if (!field.present()) return {};
  const double value = KW_TRY(field.number());
  const bool open = lower == LowerBound::Open;
  if (value < minimum || value > maximum || (open && value == minimum)) {
    return field.error(field.value().dump() + " is not " + (open ? "above " : "at least ") +
                       json(minimum).dump() + " and at most " + json(maximum).dump());
  }
  out = value;
  return {};
}

// A duration string ("15m") of at least `minimum`.
inline constexpr milliseconds kMaxDuration = std::chrono::days(365);

inline Status read_duration(const JsonField& field, milliseconds minimum, milliseconds& out) {
  if (!field.present()) return {};
  const std::string text = KW_TRY(field.string("a duration string like \"15m\""));
  const milliseconds duration = KW_TRY(field.wrap(parse_duration(text)));
  if (duration < minimum) {
    return field.error(text + " is shorter than " + format_duration(minimum));
  }
  // Longer would overflow the timers (nanoseconds added to the clock); no schedule needs it.
  if (duration > kMaxDuration) {
    return field.error(text + " is longer than " + format_duration(kMaxDuration));
  }
  out = duration;
  return {};
}

}  // namespace kernelwatch::config::detail
