#include "config/config.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>

#include "config/duration.hpp"
#include "config/metrics.hpp"
#include "core/json_fields.hpp"
#include "core/json_limits.hpp"
#include "core/url.hpp"
#include "runners/command_config.hpp"

namespace kernelwatch::config {
namespace {

using core::ErrorCode;
using core::JsonField;
using core::Status;
using json = nlohmann::json;
using notifiers::InsecureHttp;
using std::chrono::milliseconds;

constexpr std::string_view kRedacted = "<redacted>";

bool looks_like_url(std::string_view text) {
  return text.find("://") != std::string_view::npos;
}

// A user-written value quoted for a message; values that might be secrets (URLs, long strings
// pasted into the wrong field) are not shown.
std::string shown(std::string_view text) {
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
         const std::filesystem::path& base_dir)
      : errors_{std::string(source), ErrorCode::InvalidArgument, /*name_found=*/true,
                /*null_is_absent=*/false, /*whole_floats=*/false},
        environment_(environment),
        base_dir_(base_dir) {}

  [[nodiscard]] JsonField root(const json& document) const {
    return JsonField(document, "", errors_);
  }

  [[nodiscard]] std::filesystem::path resolve(const std::string& path_text) const {
    const std::filesystem::path path(path_text);
    return path.is_absolute() ? path : (base_dir_ / path).lexically_normal();
  }

  [[nodiscard]] const Environment& environment() const { return environment_; }
  std::vector<std::string>& warnings() { return warnings_; }

 private:
  core::JsonErrors errors_;
  const Environment& environment_;
  std::filesystem::path base_dir_;
  std::vector<std::string> warnings_;
};

// The field as an object whose every key is one of `allowed`.
Result<JsonField> object_of(const JsonField& field, const std::vector<std::string_view>& allowed,
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
Status read_count(const JsonField& field, std::size_t minimum, std::size_t maximum,
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
Status read_number(const JsonField& field, double minimum, double maximum, LowerBound lower,
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
constexpr milliseconds kMaxDuration = std::chrono::days(365);

Status read_duration(const JsonField& field, milliseconds minimum, milliseconds& out) {
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

// --- secrets -------------------------------------------------------------------------------

enum class InlineValue { Allowed, Refused };
enum class Presence { Required, Optional };
enum class UnsetVariable { Fail, Ignore };

struct ResolvedSecret {
  JsonField field;  // the field it came from, for later messages: "notifiers[0].url_env"
  std::string value;
  SecretSource source;
};

// One of `<name>`, `<name>_file`, `<name>_env`.
Result<ResolvedSecret> read_secret(const Reader& reader, const JsonField& object,
                                   const std::string& name, InlineValue inline_value,
                                   Presence presence, UnsetVariable unset) {
  const std::string file_key = name + "_file";
  const std::string env_key = name + "_env";
  std::vector<std::string> keys;
  if (inline_value == InlineValue::Allowed) keys.push_back(name);
  keys.push_back(file_key);
  keys.push_back(env_key);
  std::string choices;
  for (const auto& key : keys) choices += (choices.empty() ? "" : ", ") + key;
  const auto present = std::count_if(keys.begin(), keys.end(),
                                     [&](const auto& key) { return object[key].present(); });
  if (present > 1) {
    return object.error((presence == Presence::Required ? "exactly one of " : "at most one of ") +
                        choices);
  }
  if (present == 0) {
    if (presence == Presence::Required) return object.error("exactly one of " + choices);
    return ResolvedSecret{object[name], {}, {}};
  }

  if (inline_value == InlineValue::Allowed && object[name].present()) {
    ResolvedSecret out{object[name], {}, {SecretOrigin::Inline, {}}};
    out.value = KW_TRY(out.field.string());
    if (out.value.empty()) return out.field.error("is empty");
    return out;
  }
  if (object[file_key].present()) {
    const JsonField field = object[file_key];
    const std::string text = KW_TRY(field.string("a file path"));
    if (looks_like_url(text)) {
      return field.error("expected a file path, got what looks like a URL (not shown)");
    }
    if (text.empty()) return field.error("expected a file path, got \"\"");
    const auto file = reader.resolve(text);
    return ResolvedSecret{
        field, KW_TRY(field.wrap(read_secret_file(file))), {SecretOrigin::File, file.string()}};
  }
  const JsonField field = object[env_key];
  const std::string variable = KW_TRY(field.string("a variable name"));
  ResolvedSecret out{field, {}, {SecretOrigin::Environment, variable}};
  auto content = read_secret_env(reader.environment(), variable);
  if (!content) {
    if (content.error().code == ErrorCode::NotFound && unset == UnsetVariable::Ignore) return out;
    return field.error(content.error());
  }
  out.value = std::move(*content);
  return out;
}

// --- sections ------------------------------------------------------------------------------

Status read_storage(const Reader& reader, const JsonField& field, StorageConfig& out) {
  const JsonField object = KW_TRY(object_of(field, {"path"}));
  const std::string text = KW_TRY(object["path"].string_or(out.path.string()));
  if (text.empty()) return object["path"].error("must not be empty");
  out.path = reader.resolve(text);
  return {};
}

// A-Z, a-z, 0-9, '.', '-', '_': notifier names.
bool word_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// http.listen: host:port (core::parse_host_port) with a port of 0 (any free one) to 65535.
Status parse_listen(const JsonField& field, HttpConfig& out) {
  const std::string& text = out.listen;
  const auto bad = [&](std::string_view why) {
    return field.error(shown(text) + " is not host:port like \"127.0.0.1:9477\" or " +
                       "\"[::1]:9477\"" + std::string(why));
  };
  const auto address = core::parse_host_port(text);
  if (!address) return bad(" (" + address.error().message + ")");
  if (!address->port) return bad(" (the port is missing)");
  const std::string& port = *address->port;
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad("");
  }
  const long number = std::stol(port);
  if (number > 65535) return bad(" (the port is above 65535)");
  out.host = address->host;
  out.port = static_cast<std::uint16_t>(number);
  return {};
}

Status read_http(Reader& reader, const JsonField& field, HttpConfig& out) {
  const JsonField object =
      KW_TRY(object_of(field, {"listen", "token_file", "token_env", "public_url", "header_timeout",
                               "max_connections_per_client"}));
  out.listen = KW_TRY(object["listen"].string_or(out.listen));
  KW_TRY(parse_listen(object["listen"], out));
  const ResolvedSecret token = KW_TRY(read_secret(reader, object, "token", InlineValue::Refused,
                                                  Presence::Optional, UnsetVariable::Ignore));
  out.token = token.value;
  out.token_source = token.source;
  if (token.source.origin == SecretOrigin::Environment && out.token.empty()) {
    reader.warnings().push_back(token.field.path() + ": environment variable " + token.source.name +
                                " is not set; the mutating endpoints are disabled");
  }
  const JsonField public_url = object["public_url"];
  out.public_url = KW_TRY(public_url.string_or(out.public_url));
  if (!out.public_url.empty()) {
    if (!core::parse_url(out.public_url)) {
      return public_url.error("expected an http:// or https:// URL");
    }
    while (out.public_url.size() > 1 && out.public_url.back() == '/') out.public_url.pop_back();
  }
  KW_TRY(read_duration(object["header_timeout"], milliseconds(100), out.header_timeout));
  if (out.header_timeout > std::chrono::minutes(5)) {
    return object["header_timeout"].error("longer than 5m (a slow client would hold a connection)");
  }
  KW_TRY(read_count(object["max_connections_per_client"], 1, 256, out.max_connections_per_client));
  return {};
}

// "auto" is nullopt: the daemon picks CUDA when it finds a GPU.
Status read_backend(const JsonField& field, std::optional<kernels::Backend>& out) {
  const std::string text = KW_TRY(field.string());
  if (text == "auto") {
    out.reset();
    return {};
  }
  const auto backend = kernels::parse_backend(text);
  if (!backend) return field.error(shown(text) + " is not one of auto, cuda, cpu");
  out = *backend;
  return {};
}

std::string_view backend_name(const std::optional<kernels::Backend>& backend) {
  return backend ? kernels::to_string(*backend) : "auto";
}

Status read_schedule(const JsonField& field, ScheduleConfig& out) {
  const JsonField object = KW_TRY(object_of(field, {"interval", "jitter", "run_at_start"}));
  KW_TRY(read_duration(object["interval"], std::chrono::seconds(1), out.interval));
  KW_TRY(read_duration(object["jitter"], milliseconds(0), out.jitter));
  if (out.jitter >= out.interval) {
    return object["jitter"].error(format_duration(out.jitter) +
                                  " is not shorter than schedule.interval (" +
                                  format_duration(out.interval) + ")");
  }
  const bool run_at_start = KW_TRY(object["run_at_start"].boolean_or(out.at_start == AtStart::Run));
  out.at_start = run_at_start ? AtStart::Run : AtStart::Wait;
  return {};
}

// A kernel, pass or provider name, parsed by core; the message lists the accepted names and
// quotes the text only when it cannot be a secret.
template <class Enum, std::size_t N>
Result<Enum> read_name(const JsonField& field, const std::string& text,
                       Result<Enum> (*parse)(std::string_view), const Enum (&values)[N]) {
  auto parsed = parse(text);
  if (!parsed) return field.error(shown(text) + " is not one of " + core::names_of(values));
  return parsed;
}

std::string_view example_workload(core::Kernel kernel) {
  return kernel == core::Kernel::Tvd ? "tokens1024-vocab4096-fp32" : "hidden2048-rows2048-fp32";
}

// The providers to run: both of kernelwatch's when the field is absent.
Result<std::vector<core::Provider>> read_providers(const JsonField& field) {
  std::vector<core::Provider> providers(std::begin(core::kProviders), std::end(core::kProviders));
  if (!field.present()) return providers;
  const auto items = KW_TRY(field.array());
  if (items.empty()) return field.error("lists no provider");
  providers.clear();
  for (const JsonField& item : items) {
    const std::string text = KW_TRY(item.string());
    const core::Provider provider =
        KW_TRY(read_name(item, text, core::parse_provider, core::kProviders));
    if (std::find(providers.begin(), providers.end(), provider) != providers.end()) {
      return item.error(shown(text) + " is listed twice");
    }
    providers.push_back(provider);
  }
  return providers;
}

// Workload labels, each of `kernel` and each passing `check` (a runner's own limits), if any.
Result<std::vector<core::Workload>> read_workloads(
    const JsonField& field, core::Kernel kernel,
    const std::function<Status(const core::Workload&)>& check = {}) {
  const auto items = KW_TRY(field.array());
  if (items.empty()) return field.error("lists no workload");
  const std::string kernel_name(core::to_string(kernel));
  std::vector<core::Workload> workloads;
  for (const JsonField& item : items) {
    const std::string label = KW_TRY(item.string("a workload label"));
    core::Workload workload = KW_TRY(item.wrap(core::Workload::from_label(label)));
    if (!workload.kernel) {
      return item.error(shown(label) + " is not a " + kernel_name + " workload like \"" +
                        std::string(example_workload(kernel)) + "\"");
    }
    if (*workload.kernel != kernel) {
      return item.error(shown(label) + " is a " + std::string(core::to_string(*workload.kernel)) +
                        " workload, not a " + kernel_name + " one");
    }
    for (const auto& earlier : workloads) {
      if (earlier.label() == workload.label()) return item.error(shown(label) + " is listed twice");
    }
    if (check) {
      if (auto ok = check(workload); !ok) return item.error(ok.error().message);
    }
    workloads.push_back(std::move(workload));
  }
  return workloads;
}

// A liger-bench entry's providers: required, each one liger-bench runs for the kernel.
Result<std::vector<runners::LigerProvider>> read_liger_providers(const JsonField& object,
                                                                 core::Kernel kernel) {
  const JsonField field = object["providers"];
  const std::string kernel_name(core::to_string(kernel));
  if (!field.present()) {
    return object.error("providers is missing (liger-bench runs " + runners::providers_of(kernel) +
                        " for " + kernel_name + ")");
  }
  const auto items = KW_TRY(field.array());
  if (items.empty()) return field.error("lists no provider");
  std::vector<runners::LigerProvider> providers;
  for (const JsonField& item : items) {
    const std::string text = KW_TRY(item.string());
    const auto provider = runners::parse_liger_provider(text);
    if (!provider || !runners::supports(kernel, *provider)) {
      return item.error(shown(text) + " is not a provider liger-bench runs for " + kernel_name +
                        " (" + runners::providers_of(kernel) + ")");
    }
    if (std::find(providers.begin(), providers.end(), *provider) != providers.end()) {
      return item.error(shown(text) + " is listed twice");
    }
    providers.push_back(*provider);
  }
  return providers;
}

// How a liger-bench entry runs: python (required), script (must exist), timeout.
Status read_liger_options(const Reader& reader, const JsonField& object,
                          runners::LigerBenchOptions& out) {
  const JsonField python_field = object["python"];
  if (!python_field.present()) {
    return object.error(
        "python is missing (the interpreter of a venv with torch, triton and liger-kernel, like "
        "\"/opt/venv/bin/python3\")");
  }
  const std::string python = KW_TRY(python_field.string());
  if (python.empty()) return python_field.error("is empty");
  // A bare name is looked up in PATH when the runner starts; a path is taken relative to the
  // config file. A missing interpreter is a failed run, not a config error (venvs come and go).
  out.python = python.find('/') == std::string::npos ? std::filesystem::path(python)
                                                     : reader.resolve(python);
  const JsonField script_field = object["script"];
  if (script_field.present()) {
    out.script = reader.resolve(KW_TRY(script_field.string()));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(out.script, ec)) {
      return script_field.error("\"" + out.script.string() + "\" is not a file");
    }
  }
  KW_TRY(read_duration(object["timeout"], std::chrono::seconds(1), out.timeout));
  return {};
}

// `runner`: absent for kernelwatch's own kernels, whose entries take none of a runner's fields.
Result<Runner> read_runner(const JsonField& object) {
  const JsonField field = object["runner"];
  if (!field.present()) {
    for (const std::string_view key : {"python", "script", "timeout"}) {
      if (object[key].present())
        return object[key].error("applies to a benchmark with a \"runner\"");
    }
    return Runner::Harness;
  }
  const std::string runner = KW_TRY(field.string());
  if (runner == runners::kCommandRunner) return Runner::Command;
  if (runner != runners::kLigerBenchRunner) {
    return field.error(shown(runner) +
                       " is not a known runner (known: " + std::string(runners::kLigerBenchRunner) +
                       ", " + std::string(runners::kCommandRunner) +
                       "; leave it out for kernelwatch's own kernels)");
  }
  return Runner::LigerBench;
}

Status read_benchmark(const Reader& reader, const JsonField& field, BenchmarkConfig& out) {
  const JsonField entry = KW_TRY(field.object());
  if (entry["interval"].present()) {
    milliseconds interval{0};
    KW_TRY(read_duration(entry["interval"], std::chrono::seconds(1), interval));
    out.interval = interval;
  }
  if (entry["runner"].present() && KW_TRY(read_runner(entry)) == Runner::Command) {
    // The runner reads its own entry; the config lends it durations and paths.
    out.runner = Runner::Command;
    runners::EntryReaderServices services;
    services.duration = [](const JsonField& f, milliseconds minimum) -> Result<milliseconds> {
      milliseconds value{0};
      KW_TRY(read_duration(f, minimum, value));
      return value;
    };
    services.resolve = [&reader](const std::string& path) { return reader.resolve(path); };
    out.command = KW_TRY(runners::read_command_entry(entry, services));
    return {};
  }
  const JsonField object =
      KW_TRY(object_of(field, {"runner", "kernel", "pass", "providers", "workloads", "python",
                               "script", "timeout", "interval"}));
  for (const std::string_view key : {"kernel", "pass", "workloads"}) {
    if (!object[key].present()) return object.error(std::string(key) + " is missing");
  }
  out.runner = KW_TRY(read_runner(object));
  const std::string kernel = KW_TRY(object["kernel"].string());
  out.kernel = KW_TRY(read_name(object["kernel"], kernel, core::parse_kernel, core::kKernels));
  const std::string pass = KW_TRY(object["pass"].string());
  out.pass = KW_TRY(read_name(object["pass"], pass, core::parse_pass, core::kPasses));
  if (out.runner == Runner::LigerBench) {
    out.liger_providers = KW_TRY(read_liger_providers(object, out.kernel));
    KW_TRY(read_liger_options(reader, object, out.liger));
    // Each workload must be one liger-bench runs for every provider listed.
    const auto runs_everywhere = [&](const core::Workload& workload) -> Status {
      for (const auto provider : out.liger_providers) {
        KW_TRY(runners::validate(runners::LigerCase{out.kernel, out.pass, provider, workload}));
      }
      return {};
    };
    out.workloads = KW_TRY(read_workloads(object["workloads"], out.kernel, runs_everywhere));
  } else {
    out.providers = KW_TRY(read_providers(object["providers"]));
    out.workloads = KW_TRY(read_workloads(object["workloads"], out.kernel));
  }
  return {};
}

Status read_benchmarks(const Reader& reader, const JsonField& field,
                       std::vector<BenchmarkConfig>& out) {
  const auto items = KW_TRY(field.array());
  for (std::size_t i = 0; i < items.size(); ++i) {
    BenchmarkConfig benchmark;
    KW_TRY(read_benchmark(reader, items[i], benchmark));
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (benchmark.runner == Runner::Command || out[j].runner == Runner::Command) {
        if (out[j].runner == benchmark.runner && out[j].command.name == benchmark.command.name) {
          return items[i]["name"].error(shown(benchmark.command.name) + " is already the name of " +
                                        items[j].path());
        }
        continue;
      }
      if (out[j].runner == benchmark.runner && out[j].kernel == benchmark.kernel &&
          out[j].pass == benchmark.pass) {
        return items[i].error(std::string(core::to_string(benchmark.kernel)) + "/" +
                              std::string(core::to_string(benchmark.pass)) +
                              " is already listed in " + items[j].path());
      }
    }
    out.push_back(std::move(benchmark));
  }
  return {};
}

Status read_bench(const JsonField& field, kernels::TimingPolicy& out) {
  const JsonField object = KW_TRY(object_of(field, {"warmup", "repetitions"}));
  KW_TRY(read_duration(object["warmup"], milliseconds(0), out.warmup));
  KW_TRY(read_duration(object["repetitions"], milliseconds(1), out.repetitions));
  return {};
}

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
      field::number("spread_factor", &BandParameters::spread_factor, 0.0, kHuge),
      field::count("noise_window", &BandParameters::noise_window, 1, kMaxWindow),
      field::count("noise_min_runs", &BandParameters::noise_min_runs, 1, kMaxWindow,
                   "noise_window"),
      field::number("noise_quantile", &BandParameters::noise_quantile, 0.0, 1.0),
      field::number("noise_factor", &BandParameters::noise_factor, 0.0, kHuge),
      field::number("late_confirm_threshold", &BandParameters::late_confirm_threshold, 0.0, kHuge),
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

// --- notifiers -----------------------------------------------------------------------------

// A resolved notifier URL, parsed by core::parse_url with the notifiers' http:// rule; messages
// name the field, never the URL. `which` names one URL of several in a file or variable
// ("URL 2 in ").
Status check_notifier_url(const ResolvedSecret& url, InsecureHttp insecure_http,
                          const std::string& which = "") {
  const std::string what =
      which + (url.source.origin == SecretOrigin::File
                   ? "the content of \"" + url.source.name + "\""
               : url.source.origin == SecretOrigin::Environment ? "the value of " + url.source.name
                                                                : "the value");
  if (url.value.find_first_of(" \t\r\n") != std::string::npos) {
    return url.field.error(what + " contains whitespace (one URL expected)");
  }
  const core::Url parsed = KW_TRY(url.field.wrap(core::parse_url(url.value, what)));
  if (notifiers::refuses_plain_http(parsed, insecure_http)) {
    return url.field.error(what + " is plain http:// to a host other than loopback; " +
                           "use https:// or set allow_insecure_http: true");
  }
  return {};
}

// Its type and its name (default "<type>-<index>").
Status read_notifier_identity(const JsonField& object, std::size_t index,
                              notifiers::Destination& destination) {
  const JsonField type_field = object["type"];
  if (!type_field.present()) return object.error("type is missing");
  const std::string type = KW_TRY(type_field.string());
  const auto parsed_type = notifiers::parse_destination_type(type);
  if (!parsed_type) {
    return type_field.error(shown(type) + " is not one of slack, webhook, alertmanager");
  }
  destination.type = *parsed_type;
  destination.name = KW_TRY(object["name"].string_or(
      std::string(notifiers::to_string(destination.type)) + "-" + std::to_string(index)));
  const std::string& name = destination.name;
  if (name.empty() || name.size() > 64 || !std::all_of(name.begin(), name.end(), word_char_ok)) {
    return object["name"].error(shown(name) + " is not 1 to 64 of A-Z, a-z, 0-9, '.', '-', '_'");
  }
  return {};
}

// The peers of an Alertmanager cluster: `urls` (a list in the file), `urls_file` (a file, one
// URL per line) or `urls_env` (a variable, URLs separated by whitespace or commas). Empty when
// the entry has none of them (it has `url`, `url_file` or `url_env` instead). Each URL is
// checked like `url`; two naming the same Alertmanager are refused. Messages never show a URL.
Result<std::vector<ResolvedSecret>> read_peer_urls(const Reader& reader, const JsonField& object,
                                                   const notifiers::Destination& destination) {
  std::vector<std::string> keys;
  for (const char* key : {"urls", "urls_file", "urls_env"}) {
    if (object[key].present()) keys.emplace_back(key);
  }
  if (keys.empty()) return std::vector<ResolvedSecret>{};
  const JsonField field = object[keys.front()];
  if (destination.type != notifiers::DestinationType::Alertmanager) {
    return field.error(
        "only alertmanager notifiers take several URLs (the peers of a cluster); "
        "use url, url_file or url_env");
  }
  for (const char* single : {"url", "url_file", "url_env"}) {
    if (object[single].present()) {
      return object.error(std::string("both ") + single + " and " + keys.front() +
                          " are set: url for one Alertmanager, urls for the peers of a cluster");
    }
  }
  if (keys.size() > 1) return object.error("at most one of urls, urls_file, urls_env");

  std::vector<ResolvedSecret> peers;
  std::vector<std::string> which;  // "" for a list item (its path names it), else "URL n in "
  if (keys.front() == "urls") {
    const auto items = KW_TRY(field.array("a list of URLs"));
    for (const JsonField& item : items) {
      ResolvedSecret peer{item, KW_TRY(item.string("a URL")), {SecretOrigin::Inline, {}}};
      if (peer.value.empty()) return item.error("is empty");
      peers.push_back(std::move(peer));
      which.emplace_back();
    }
  } else {
    const ResolvedSecret all = KW_TRY(read_secret(reader, object, "urls", InlineValue::Refused,
                                                  Presence::Required, UnsetVariable::Fail));
    std::size_t begin = 0;
    const std::string& text = all.value;
    while ((begin = text.find_first_not_of(" \t\r\n,", begin)) != std::string::npos) {
      const std::size_t end = std::min(text.find_first_of(" \t\r\n,", begin), text.size());
      peers.push_back({all.field, text.substr(begin, end - begin), all.source});
      which.push_back("URL " + std::to_string(peers.size()) + " in ");
      begin = end;
    }
  }
  if (peers.empty()) {
    return field.error("lists no URL: a cluster needs at least one peer");
  }
  std::vector<std::string> endpoints;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    KW_TRY(check_notifier_url(peers[i], destination.insecure_http, which[i]));
    endpoints.push_back(
        KW_TRY(peers[i].field.wrap(notifiers::alertmanager_endpoint(peers[i].value))));
    for (std::size_t j = 0; j < i; ++j) {
      if (endpoints[j] != endpoints[i]) continue;
      if (which[i].empty()) {
        return peers[i].field.error("names the same Alertmanager as " + peers[j].field.path() +
                                    " (URLs not shown)");
      }
      return field.error("URLs " + std::to_string(j + 1) + " and " + std::to_string(i + 1) +
                         " name the same Alertmanager (URLs not shown)");
    }
  }
  return peers;
}

// The URL and, for webhooks, the signing secret; the CA bundle to verify against. An
// Alertmanager cluster's peer URLs go to `peers` instead (the caller makes one Notifier each).
Status read_notifier_endpoint(const Reader& reader, const JsonField& object, Notifier& out,
                              std::vector<ResolvedSecret>& peers) {
  notifiers::Destination& destination = out.destination;
  peers = KW_TRY(read_peer_urls(reader, object, destination));
  if (peers.empty()) {
    const ResolvedSecret url = KW_TRY(read_secret(reader, object, "url", InlineValue::Allowed,
                                                  Presence::Required, UnsetVariable::Fail));
    KW_TRY(check_notifier_url(url, destination.insecure_http));
    destination.url = url.value;
    out.url_source = url.source;
  }

  if (destination.type != notifiers::DestinationType::Webhook) {
    for (const std::string_view key : {"secret_file", "secret_env"}) {
      if (object[key].present()) return object[key].error("only webhook notifiers are signed");
    }
  }
  const ResolvedSecret secret = KW_TRY(read_secret(reader, object, "secret", InlineValue::Refused,
                                                   Presence::Optional, UnsetVariable::Fail));
  destination.secret = secret.value;
  out.secret_source = secret.source;

  const std::string ca_file = KW_TRY(object["ca_file"].string_or(""));
  if (!ca_file.empty()) {
    destination.ca_file = reader.resolve(ca_file).string();
    std::error_code error;
    if (!std::filesystem::is_regular_file(destination.ca_file, error)) {
      return object["ca_file"].error(ErrorCode::NotFound,
                                     "\"" + destination.ca_file + "\" is not a readable file");
    }
  }
  return {};
}

// Timeouts, the minimum gap between requests and the retry schedule.
Status read_delivery(const JsonField& object, notifiers::Destination& destination) {
  // One `timeout` bounds each step of a delivery alike.
  milliseconds timeout = destination.timeouts.read;
  KW_TRY(read_duration(object["timeout"], milliseconds(1), timeout));
  destination.timeouts = {timeout, timeout, timeout, timeout, timeout};
  if (object["min_interval"].present()) {
    milliseconds min_interval{0};
    KW_TRY(read_duration(object["min_interval"], milliseconds(0), min_interval));
    destination.min_interval = min_interval;
  }
  if (object["resend_interval"].present()) {
    if (destination.type != notifiers::DestinationType::Alertmanager) {
      return object["resend_interval"].error(
          "only alertmanager notifiers re-send active alerts (Slack and webhooks get reminders, "
          "detector.repeat_interval)");
    }
    KW_TRY(read_duration(object["resend_interval"], std::chrono::seconds(1),
                         destination.resend_interval));
  }
  if (object["backoff"].present()) {
    notifiers::Backoff& backoff = destination.backoff;
    const JsonField fields = KW_TRY(object_of(object["backoff"], {"base", "cap", "max_age"}));
    KW_TRY(read_duration(fields["base"], milliseconds(1), backoff.base));
    KW_TRY(read_duration(fields["cap"], milliseconds(1), backoff.cap));
    KW_TRY(read_duration(fields["max_age"], milliseconds(1), backoff.max_age));
    if (backoff.cap < backoff.base) {
      return fields["cap"].error(format_duration(backoff.cap) + " is shorter than backoff.base (" +
                                 format_duration(backoff.base) + ")");
    }
  }
  return {};
}

// One entry: one Notifier, or one per peer of an Alertmanager cluster (`urls`), each its own
// destination `<name>/<n>` with the entry's settings.
Result<std::vector<Notifier>> read_notifier(const Reader& reader, const JsonField& field,
                                            std::size_t index) {
  const JsonField object = KW_TRY(
      object_of(field, {"type", "name", "url", "url_file", "url_env", "urls", "urls_file",
                        "urls_env", "secret_file", "secret_env", "ca_file", "allow_insecure_http",
                        "timeout", "min_interval", "backoff", "resend_interval"}));
  Notifier entry;
  entry.entry = index;
  KW_TRY(read_notifier_identity(object, index, entry.destination));
  const bool allow_insecure = KW_TRY(object["allow_insecure_http"].boolean_or(false));
  entry.destination.insecure_http = allow_insecure ? InsecureHttp::Allow : InsecureHttp::Refuse;
  std::vector<ResolvedSecret> peers;
  KW_TRY(read_notifier_endpoint(reader, object, entry, peers));
  KW_TRY(read_delivery(object, entry.destination));
  if (peers.empty()) return std::vector<Notifier>{std::move(entry)};
  std::vector<Notifier> out;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    Notifier peer = entry;
    peer.destination.cluster = entry.destination.name;
    peer.destination.name = notifiers::peer_name(entry.destination.name, i + 1);
    peer.destination.url = peers[i].value;
    peer.url_source = peers[i].source;
    peer.peer = i + 1;
    out.push_back(std::move(peer));
  }
  return out;
}

Status read_notifiers(const Reader& reader, const JsonField& field, std::vector<Notifier>& out) {
  const auto items = KW_TRY(field.array());
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::vector<Notifier> notifiers = KW_TRY(read_notifier(reader, items[i], i));
    // Peers are named "<name>/<n>" and a configured name has no '/': comparing the entries'
    // names is enough.
    const std::string& name = notifiers.front().configured_name();
    for (const Notifier& other : out) {
      if (other.configured_name() == name) {
        return items[i]["name"].error(shown(name) + " is already the name of " +
                                      items[other.entry].path());
      }
    }
    for (auto& notifier : notifiers) out.push_back(std::move(notifier));
  }
  return {};
}

// "line L column C: malformed JSON: <what>", the position computed from the byte offset (1-based
// columns, the offending character itself) and nlohmann's message without its prefix, its own
// position and the "last read" echo of the input, which may be part of a secret.
std::string describe_parse_error(std::string_view source, std::string_view text,
                                 const json::parse_error& error) {
  const std::size_t offset =
      std::min<std::size_t>(error.byte == 0 ? 0 : error.byte - 1, text.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  const std::size_t column = offset - line_start + 1;
  std::string what = error.what();
  if (const auto at = what.find("parse error"); at != std::string::npos) {
    const auto colon = what.find(": ", at);
    what = colon == std::string::npos ? std::string() : what.substr(colon + 2);
  }
  if (const auto echo = what.find("; last read:"); echo != std::string::npos) what.resize(echo);
  return std::string(source) + ": line " + std::to_string(line) + " column " +
         std::to_string(column) + ": malformed JSON: " + what;
}

Result<Config> parse_document(Reader& reader, const json& document, std::string_view source) {
  Config config;
  config.source = std::string(source);
  const JsonField root = KW_TRY(object_of(reader.root(document),
                                          {"storage", "http", "metrics", "backend", "schedule",
                                           "benchmarks", "bench", "detector", "notifiers"},
                                          "an object at the top level"));
  config.storage.path = reader.resolve(config.storage.path.string());
  if (root["storage"].present()) KW_TRY(read_storage(reader, root["storage"], config.storage));
  if (root["http"].present()) KW_TRY(read_http(reader, root["http"], config.http));
  if (root["metrics"].present()) KW_TRY(read_metrics(root["metrics"], config.metrics));
  if (root["backend"].present()) KW_TRY(read_backend(root["backend"], config.backend));
  if (root["schedule"].present()) KW_TRY(read_schedule(root["schedule"], config.schedule));
  if (root["benchmarks"].present())
    KW_TRY(read_benchmarks(reader, root["benchmarks"], config.benchmarks));
  if (root["bench"].present()) KW_TRY(read_bench(root["bench"], config.bench));
  if (root["detector"].present()) KW_TRY(read_detector(reader, root["detector"], config.detector));
  if (root["notifiers"].present()) {
    KW_TRY(read_notifiers(reader, root["notifiers"], config.notifiers));
  }
  config.warnings = std::move(reader.warnings());
  return config;
}

void secret_json(json& object, const std::string& name, const std::string& value,
                 const SecretSource& source) {
  switch (source.origin) {
    case SecretOrigin::None:
      break;
    case SecretOrigin::Inline:
      object[name] = kRedacted;
      break;
    case SecretOrigin::File:
      object[name + "_file"] = source.name;
      object[name] = value.empty() ? json() : json(kRedacted);
      break;
    case SecretOrigin::Environment:
      object[name + "_env"] = source.name;
      object[name] = value.empty() ? json() : json(kRedacted);
      break;
  }
}

}  // namespace

Result<Config> parse_config(std::string_view json_text, std::string_view source_name,
                            const Environment& environment, const std::filesystem::path& base_dir) {
  Reader reader(source_name, environment, base_dir);
  if (const auto deep = core::json_depth_exceeded(json_text)) {
    return core::fail(ErrorCode::ParseError,
                      std::string(source_name) + ": line " +
                          std::to_string(core::line_of_offset(json_text, *deep)) +
                          ": nesting deeper than " + std::to_string(core::kMaxJsonDepth) +
                          " levels of arrays and objects");
  }
  // A member named twice in one object is refused: which of the two was meant is a guess.
  // Each open object's names so far, and the name each was opened under.
  std::vector<std::pair<std::string, std::set<std::string>>> open_objects;
  std::string last_key;
  std::optional<std::string> duplicate;
  const json::parser_callback_t check_keys = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back(std::exchange(last_key, std::string()), std::set<std::string>());
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::array_start:
        last_key.clear();
        break;
      case json::parse_event_t::key: {
        last_key = parsed.get<std::string>();
        if (!open_objects.empty() && !open_objects.back().second.insert(last_key).second &&
            !duplicate) {
          std::string where;
          for (const auto& [name, unused] : open_objects) {
            if (!name.empty()) where += (where.empty() ? "" : ".") + name;
          }
          duplicate = shown(last_key) + " appears twice in " +
                      (where.empty() ? std::string("the top-level object") : where);
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  json document;
  try {
    document = json::parse(json_text, check_keys);
  } catch (const json::parse_error& error) {
    return core::fail(ErrorCode::ParseError, describe_parse_error(source_name, json_text, error));
  } catch (const json::exception& error) {
    // A number beyond a double (1e400) is out_of_range.406; no text of the input is echoed.
    return core::fail(ErrorCode::ParseError,
                      std::string(source_name) + ": " +
                          (error.id == 406 ? std::string("a number is out of range (beyond a "
                                                         "double, like 1e400)")
                                           : std::string("malformed JSON")));
  }
  if (duplicate) {
    return core::fail(ErrorCode::ParseError,
                      std::string(source_name) + ": duplicate key: " + *duplicate);
  }
  try {
    return parse_document(reader, document, source_name);
  } catch (const json::exception&) {
    // Every access checks the type first; this is a bug, reported without the input's text.
    return core::fail(ErrorCode::Internal,
                      std::string(source_name) + ": unexpected JSON access error");
  }
}

Result<Config> load_config(const std::filesystem::path& path, const Environment& environment) {
  const std::string source = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return core::fail(error == ENOENT ? ErrorCode::NotFound : ErrorCode::IoError,
                      "cannot read config file \"" + source + "\": " + std::strerror(error));
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return core::fail(ErrorCode::IoError, "cannot read config file \"" + source + "\"");
  std::error_code ignored;
  const auto absolute = std::filesystem::absolute(path, ignored);
  Config config = KW_TRY(parse_config(text, source, environment, absolute.parent_path()));

  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & S_IROTH) != 0) {
    for (const Notifier& n : config.notifiers) {
      // One warning per entry (a cluster's peers come from one `urls`).
      if (n.url_source.origin == SecretOrigin::Inline && n.peer <= 1) {
        const char* field = n.peer == 0 ? "url is" : "urls are";
        config.warnings.push_back("notifiers[" + std::to_string(n.entry) + "]." + field +
                                  " written in " + source +
                                  ", which is readable by others; prefer " +
                                  (n.peer == 0 ? "url_file or url_env" : "urls_file or urls_env"));
      }
    }
  }
  return config;
}

json redacted_json(const Config& config) {
  json out = json::object();
  out["storage"] = {{"path", config.storage.path.string()}};
  json http = {{"listen", config.http.listen},
               {"public_url", config.http.public_url},
               {"header_timeout", format_duration(config.http.header_timeout)},
               {"max_connections_per_client", config.http.max_connections_per_client}};
  secret_json(http, "token", config.http.token, config.http.token_source);
  out["http"] = http;
  out["metrics"] = metrics_json(config.metrics);
  out["backend"] = backend_name(config.backend);
  out["schedule"] = {{"interval", format_duration(config.schedule.interval)},
                     {"jitter", format_duration(config.schedule.jitter)},
                     {"run_at_start", config.schedule.at_start == AtStart::Run}};
  json benchmarks = json::array();
  for (const auto& benchmark : config.benchmarks) {
    if (benchmark.runner == Runner::Command) {
      json entry = runners::command_entry_json(benchmark.command);
      entry["timeout"] = format_duration(benchmark.command.timeout);
      if (benchmark.interval) entry["interval"] = format_duration(*benchmark.interval);
      benchmarks.push_back(std::move(entry));
      continue;
    }
    const bool liger = benchmark.runner == Runner::LigerBench;
    json providers = json::array();
    if (liger) {
      for (const auto provider : benchmark.liger_providers)
        providers.push_back(runners::to_string(provider));
    } else {
      for (const auto provider : benchmark.providers)
        providers.push_back(core::to_string(provider));
    }
    json workloads = json::array();
    for (const auto& workload : benchmark.workloads) workloads.push_back(workload.label());
    json entry = {{"kernel", core::to_string(benchmark.kernel)},
                  {"pass", core::to_string(benchmark.pass)},
                  {"providers", providers},
                  {"workloads", workloads}};
    if (benchmark.interval) entry["interval"] = format_duration(*benchmark.interval);
    if (liger) {
      entry["runner"] = runners::kLigerBenchRunner;
      entry["python"] = benchmark.liger.python.string();
      entry["script"] = benchmark.liger.script.string();
      entry["timeout"] = format_duration(benchmark.liger.timeout);
    }
    benchmarks.push_back(std::move(entry));
  }
  out["benchmarks"] = benchmarks;
  out["bench"] = {{"warmup", format_duration(config.bench.warmup)},
                  {"repetitions", format_duration(config.bench.repetitions)}};
  out["detector"] = detector_json(config.detector);
  json notifier_list = json::array();
  for (const auto& n : config.notifiers) {
    const notifiers::Destination& d = n.destination;
    if (n.peer > 1) {
      // A further peer of the cluster the previous entry opened: its URL joins that entry's.
      notifier_list.back()["urls"].push_back(kRedacted);
      continue;
    }
    json entry = {{"type", notifiers::to_string(d.type)},
                  {"name", n.configured_name()},
                  {"allow_insecure_http", d.insecure_http == InsecureHttp::Allow},
                  {"timeout", format_duration(d.timeouts.read)},
                  {"backoff",
                   {{"base", format_duration(d.backoff.base)},
                    {"cap", format_duration(d.backoff.cap)},
                    {"max_age", format_duration(d.backoff.max_age)}}}};
    if (n.peer == 0) {
      secret_json(entry, "url", d.url, n.url_source);
    } else {
      // As many "<redacted>" as there are peers, after the file or variable they came from.
      if (n.url_source.origin == SecretOrigin::File) entry["urls_file"] = n.url_source.name;
      if (n.url_source.origin == SecretOrigin::Environment) entry["urls_env"] = n.url_source.name;
      entry["urls"] = json::array({kRedacted});
    }
    secret_json(entry, "secret", d.secret, n.secret_source);
    if (!d.ca_file.empty()) entry["ca_file"] = d.ca_file;
    if (d.min_interval) entry["min_interval"] = format_duration(*d.min_interval);
    if (d.type == notifiers::DestinationType::Alertmanager) {
      entry["resend_interval"] = format_duration(d.resend_interval);
    }
    notifier_list.push_back(entry);
  }
  out["notifiers"] = notifier_list;
  return out;
}

}  // namespace kernelwatch::config
