// The `detector` section: one table of settings serves the parser and the effective config.
#include "config/detail/detector_config.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kernelwatch::config::detail {
namespace {

// --- detector: one table serves the parser and the effective config ------------------------

// One setting of the `detector` section: its name there ("window", "drift.min_runs"), how it is
// read into DetectorSettings (the key is present), its value in the effective config, and the
// earlier count setting it may not exceed, if any.
struct DetectorSetting {
  std::string_view name;
  std::function<Status(const JsonField& field, DetectorSettings&)> read;
  std::function<json(const DetectorSettings&)> value;
  std::string_view at_most;
};

// The struct of DetectorSettings (const or not) whose members are Owner's.
template <class Owner, class Settings>
auto& part_of(Settings& settings) {
  if constexpr (std::is_same_v<Owner, detectors::BandParameters>) {
    return settings.parameters.band;
  } else if constexpr (std::is_same_v<Owner, detectors::DriftParameters>) {
    return settings.parameters.drift;
  } else if constexpr (std::is_same_v<Owner, detectors::ControlParameters>) {
    return settings.parameters.controls;
  } else if constexpr (std::is_same_v<Owner, detectors::AlertPolicy>) {
    return settings.alert_policy;
  } else {
    static_assert(std::is_same_v<Owner, DetectorSettings>, "not a part of DetectorSettings");
    return settings;
  }
}

// The kinds of detector setting, one factory each; qualified calls (field::count) keep
// argument-dependent lookup out of the table.
namespace field {

// An integer in [minimum, maximum].
template <class Owner, class T>
DetectorSetting count(std::string_view name, T Owner::*slot, std::size_t minimum,
                      std::size_t maximum, std::string_view at_most = {}) {
  return {name,
          [=](const JsonField& field, DetectorSettings& settings) -> Status {
            T& out = part_of<Owner>(settings).*slot;
            auto value = static_cast<std::size_t>(out);
            KW_TRY(read_count(field, minimum, maximum, value));
            out = static_cast<T>(value);
            return {};
          },
          [=](const DetectorSettings& settings) { return json(part_of<Owner>(settings).*slot); },
          at_most};
}

// A number in [minimum, maximum], or (minimum, maximum].
template <class Owner>
DetectorSetting number(std::string_view name, double Owner::*slot, double minimum, double maximum,
                       LowerBound lower = LowerBound::Closed) {
  return {name,
          [=](const JsonField& field, DetectorSettings& settings) -> Status {
            return read_number(field, minimum, maximum, lower, part_of<Owner>(settings).*slot);
          },
          [=](const DetectorSettings& settings) { return json(part_of<Owner>(settings).*slot); },
          {}};
}

// A whole number of microseconds in [minimum, maximum], held in any std::chrono duration (the
// config's duration strings stop at milliseconds; a kernel's jitter is microseconds).
template <class Owner, class Duration>
DetectorSetting microseconds(std::string_view name, Duration Owner::*slot, std::size_t minimum,
                             std::size_t maximum) {
  using std::chrono::duration_cast;
  return {
      name,
      [=](const JsonField& field, DetectorSettings& settings) -> Status {
        Duration& out = part_of<Owner>(settings).*slot;
        auto value =
            static_cast<std::size_t>(duration_cast<std::chrono::microseconds>(out).count());
        KW_TRY(read_count(field, minimum, maximum, value));
        out = duration_cast<Duration>(std::chrono::microseconds(static_cast<std::int64_t>(value)));
        return {};
      },
      [=](const DetectorSettings& settings) {
        return json(
            duration_cast<std::chrono::microseconds>(part_of<Owner>(settings).*slot).count());
      },
      {}};
}

// A duration string of at least `minimum`, held in any std::chrono duration.
template <class Owner, class Duration>
DetectorSetting duration(std::string_view name, Duration Owner::*slot, milliseconds minimum) {
  return {name,
          [=](const JsonField& field, DetectorSettings& settings) -> Status {
            milliseconds value{0};
            KW_TRY(read_duration(field, minimum, value));
            part_of<Owner>(settings).*slot = value;
            return {};
          },
          [=](const DetectorSettings& settings) {
            return json(format_duration(
                std::chrono::duration_cast<milliseconds>(part_of<Owner>(settings).*slot)));
          },
          {}};
}

// A list of provider names (any provider, imported ones included), none empty.
template <class Owner>
DetectorSetting providers(std::string_view name, std::vector<std::string> Owner::*slot) {
  return {name,
          [=](const JsonField& field, DetectorSettings& settings) -> Status {
            std::vector<std::string> names;
            for (const JsonField& item : KW_TRY(field.array())) {
              names.push_back(KW_TRY(item.string("a provider name")));
              if (names.back().empty()) return item.error("expected a provider name, got \"\"");
            }
            part_of<Owner>(settings).*slot = std::move(names);
            return {};
          },
          [=](const DetectorSettings& settings) { return json(part_of<Owner>(settings).*slot); },
          {}};
}

// A whole number of nanoseconds in [minimum, maximum] (a timer's resolution).
template <class Owner>
DetectorSetting nanoseconds(std::string_view name, std::chrono::nanoseconds Owner::*slot,
                            std::size_t minimum, std::size_t maximum) {
  return {name,
          [=](const JsonField& field, DetectorSettings& settings) -> Status {
            std::chrono::nanoseconds& out = part_of<Owner>(settings).*slot;
            auto value = static_cast<std::size_t>(out.count());
            KW_TRY(read_count(field, minimum, maximum, value));
            out = std::chrono::nanoseconds(static_cast<std::int64_t>(value));
            return {};
          },
          [=](const DetectorSettings& settings) {
            return json((part_of<Owner>(settings).*slot).count());
          },
          {}};
}

// "auto", "always" or "never" (detectors::YoungPrior).
DetectorSetting young_prior(std::string_view name) {
  using detectors::YoungPrior;
  static constexpr std::pair<std::string_view, YoungPrior> kWords[] = {
      {"auto", YoungPrior::Auto}, {"always", YoungPrior::Always}, {"never", YoungPrior::Never}};
  return {name,
          [](const JsonField& field, DetectorSettings& settings) -> Status {
            const std::string word = KW_TRY(field.string("\"auto\", \"always\" or \"never\""));
            for (const auto& [text, value] : kWords) {
              if (word == text) {
                settings.parameters.band.young_prior = value;
                return {};
              }
            }
            return field.error("expected \"auto\", \"always\" or \"never\", got \"" + word + "\"");
          },
          [](const DetectorSettings& settings) {
            for (const auto& [text, value] : kWords) {
              if (settings.parameters.band.young_prior == value) return json(std::string(text));
            }
            return json("auto");
          },
          {}};
}

}  // namespace field

constexpr std::size_t kMaxWindow = 10'000;
constexpr double kHuge = 1e9;

// Every setting of the `detector` section, in the order they are read (a bound names an earlier
// setting) and documented in docs/CONFIG.md. Defaults are the members' own.
const std::vector<DetectorSetting>& detector_settings() {
  using detectors::AlertPolicy;
  using detectors::BandParameters;
  using detectors::ControlParameters;
  using detectors::DriftParameters;
  using std::chrono::seconds;
  static const std::vector<DetectorSetting> settings = {
      field::count("window", &BandParameters::window, 2, kMaxWindow),
      field::count("min_history", &BandParameters::min_history, 2, kMaxWindow, "window"),
      field::count("big_step_min_history", &BandParameters::big_step_min_history, 1, kMaxWindow,
                   "min_history"),
      field::number("big_step_threshold", &BandParameters::big_step_threshold, 0.0, kHuge,
                    LowerBound::Open),
      field::count("trust_runs", &BandParameters::trust_runs, 1, kMaxWindow),
      field::number("min_relative_margin", &BandParameters::min_relative_margin, 0.0, 1.0),
      field::microseconds("young_jitter_us", &BandParameters::young_jitter, 0, 60'000'000),
      field::number("trusted_relative_margin", &BandParameters::trusted_relative_margin, 0.0, 1.0),
      field::young_prior("young_prior"),
      field::nanoseconds("young_resolution_ns", &BandParameters::young_resolution, 0,
                         60'000'000'000),
      field::number("young_spread_weight", &BandParameters::young_spread_weight, 0.0, 1000.0),
      field::number("young_tail", &BandParameters::young_tail, 0.0, 0.5, LowerBound::Open),
      field::number("young_tail_alone", &BandParameters::young_tail_alone, 0.0, 0.5,
                    LowerBound::Open),
      field::number("spread_factor", &BandParameters::spread_factor, 0.0, kHuge),
      field::count("noise_window", &BandParameters::noise_window, 1, kMaxWindow),
      field::count("noise_min_runs", &BandParameters::noise_min_runs, 1, kMaxWindow,
                   "noise_window"),
      field::number("noise_quantile", &BandParameters::noise_quantile, 0.0, 1.0),
      field::number("noise_factor", &BandParameters::noise_factor, 0.0, kHuge),
      field::number("late_confirm_threshold", &BandParameters::late_confirm_threshold, 0.0, kHuge),
      field::count("persist_runs", &BandParameters::persist_runs, 0, kMaxWindow),
      field::count("persist_trim", &BandParameters::persist_trim, 0, kMaxWindow),
      field::number("persist_spread", &BandParameters::persist_spread, 0.0, kHuge),
      field::number("persist_min_change", &BandParameters::persist_min_change, 0.0, kHuge),
      field::number("persist_band_factor", &BandParameters::persist_band_factor, 0.0, kHuge),
      field::count("confirm_reruns", &DetectorSettings::confirm_reruns, 0, 5),
      field::duration("repeat_interval", &AlertPolicy::repeat_interval, milliseconds(0)),
      field::count("drift.window", &DriftParameters::window, 3, kMaxWindow),
      field::count("drift.min_runs", &DriftParameters::min_runs, 3, kMaxWindow, "drift.window"),
      field::number("drift.z_threshold", &DriftParameters::z_threshold, 0.0, kHuge,
                    LowerBound::Open),
      field::number("drift.min_total_change", &DriftParameters::min_total_change, 0.0, kHuge),
      field::providers("controls.reference_providers", &ControlParameters::reference_providers),
      field::duration("controls.cycle_gap", &ControlParameters::cycle_gap, seconds(1)),
      field::count("controls.kept_cycles", &ControlParameters::kept_cycles, 1, kMaxWindow),
      field::number("controls.moved_threshold", &ControlParameters::moved_threshold, 0.0, kHuge),
      field::number("controls.host_duration_ratio", &ControlParameters::host_duration_ratio, 1.0,
                    kHuge),
      field::number("controls.host_share", &ControlParameters::host_share, 0.0, 1.0,
                    LowerBound::Open),
      field::number("controls.host_fraction", &ControlParameters::host_fraction, 0.0, 1.0,
                    LowerBound::Open),
      field::count("controls.host_min_keys", &ControlParameters::host_min_keys, 1, kMaxWindow),
      field::count("controls.incident_min_keys", &ControlParameters::incident_min_keys, 1,
                   kMaxWindow),
      field::number("controls.own_excess", &ControlParameters::own_excess, 0.0, kHuge),
      field::number("controls.own_share", &ControlParameters::own_share, 0.0, 1.0),
  };
  return settings;
}

// "drift.min_runs" -> {"drift", "min_runs"}; "window" -> {"", "window"}.
std::pair<std::string_view, std::string_view> split_setting(std::string_view name) {
  const auto dot = name.find('.');
  if (dot == std::string_view::npos) return {{}, name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

// The keys an object of the detector section may have: the settings' names in `section` and, at
// the top (section ""), the names of the nested sections.
std::vector<std::string_view> detector_keys(std::string_view section) {
  std::vector<std::string_view> keys;
  for (const auto& setting : detector_settings()) {
    const auto [setting_section, key] = split_setting(setting.name);
    std::string_view name;
    if (section.empty()) {
      name = setting_section.empty() ? key : setting_section;
    } else if (setting_section == section) {
      name = key;
    }
    if (!name.empty() && std::find(keys.begin(), keys.end(), name) == keys.end()) {
      keys.push_back(name);
    }
  }
  return keys;
}

const DetectorSetting& detector_setting(std::string_view name) {
  const auto& settings = detector_settings();
  const auto it = std::find_if(settings.begin(), settings.end(),
                               [&](const DetectorSetting& s) { return s.name == name; });
  KW_ASSERT(it != settings.end(), "a detector setting's bound names no setting");
  return *it;
}

// Settings kernelwatch no longer has: accepted with a warning, so a config that set them still
// loads. {section, key, why}.
constexpr std::array<std::array<std::string_view, 3>, 2> kRetiredSettings = {{
    {"controls", "environment_fraction",
     "the most-keys rule was replaced by the host-shift control (controls.host_*)"},
    {"controls", "environment_min_keys",
     "the most-keys rule was replaced by the host-shift control (controls.host_*)"},
}};

// The keys an object of the detector section may have: detector_keys and the retired settings.
std::vector<std::string_view> allowed_detector_keys(std::string_view section) {
  std::vector<std::string_view> keys = detector_keys(section);
  for (const auto& [retired_section, key, why] : kRetiredSettings) {
    if (retired_section == section) keys.push_back(key);
  }
  return keys;
}

}  // namespace

Status read_detector(Reader& reader, const JsonField& field, DetectorSettings& out) {
  for (const auto& [section, key, why] : kRetiredSettings) {
    const JsonField retired = field[section][key];
    if (!retired.present()) continue;
    reader.warnings().push_back(retired.path() + " is no longer used (" + std::string(why) +
                                "); it is ignored");
  }
  const JsonField detector = KW_TRY(object_of(field, allowed_detector_keys("")));
  std::string_view checked_section;
  for (const DetectorSetting& setting : detector_settings()) {
    const auto [section, key] = split_setting(setting.name);
    const JsonField holder = section.empty() ? detector : detector[section];
    if (!section.empty() && holder.present() && section != checked_section) {
      KW_TRY(object_of(holder, allowed_detector_keys(section)));
      checked_section = section;
    }
    if (holder[key].present()) KW_TRY(setting.read(holder[key], out));
    if (!setting.at_most.empty()) {
      const DetectorSetting& bound = detector_setting(setting.at_most);
      const auto value = setting.value(out).get<std::size_t>();
      const auto limit = bound.value(out).get<std::size_t>();
      if (value > limit) {
        return holder[key].error(std::to_string(value) + " is larger than " + detector.path() +
                                 "." + std::string(bound.name) + " (" + std::to_string(limit) +
                                 ")");
      }
    }
  }
  return {};
}

json detector_json(const DetectorSettings& detector) {
  json out = json::object();
  for (const DetectorSetting& setting : detector_settings()) {
    const auto [section, key] = split_setting(setting.name);
    json& holder = section.empty() ? out : out[std::string(section)];
    holder[std::string(key)] = setting.value(detector);
  }
  return out;
}

}  // namespace kernelwatch::config::detail
