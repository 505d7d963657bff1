#include "config/config.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <set>
#include <utility>

#include "config/duration.hpp"

namespace kernelwatch::config {
namespace {

using core::ErrorCode;
using core::Status;
using json = nlohmann::json;
using std::chrono::milliseconds;

constexpr std::string_view kRedacted = "<redacted>";

// Returns early from the enclosing function with the error of a failed Status or Result.
#define KW_CONFIG_TRY(expression)                                        \
  do {                                                                   \
    if (auto kw_status_ = (expression); !kw_status_) {                   \
      return tl::unexpected<core::Error>(std::move(kw_status_).error()); \
    }                                                                    \
  } while (false)

std::string member(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string element(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

bool looks_like_url(std::string_view text) {
  return text.find("://") != std::string_view::npos;
}

// A user-written value quoted for a message; values that might be secrets (URLs, long strings
// pasted into the wrong field) are not shown.
std::string shown(std::string_view text) {
  if (looks_like_url(text) || text.size() > 64) return "(value not shown)";
  return "\"" + std::string(text) + "\"";
}

std::string type_name(const json& value) {
  if (value.is_number()) return "number";
  return value.type_name();
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

// One parse: where messages point and where secrets and relative paths come from.
class Reader {
 public:
  Reader(std::string_view source, const Environment& environment,
         const std::filesystem::path& base_dir)
      : source_(source), environment_(environment), base_dir_(base_dir) {}

  [[nodiscard]] tl::unexpected<core::Error> fail(ErrorCode code, const std::string& path,
                                                 const std::string& what) const {
    std::string message = source_ + ": ";
    if (!path.empty()) message += path + ": ";
    return tl::unexpected<core::Error>(core::Error{code, message + what});
  }
  [[nodiscard]] tl::unexpected<core::Error> invalid(const std::string& path,
                                                    const std::string& what) const {
    return fail(ErrorCode::InvalidArgument, path, what);
  }
  [[nodiscard]] tl::unexpected<core::Error> wrong_type(const std::string& path,
                                                       std::string_view expected,
                                                       const json& got) const {
    return invalid(path, "expected " + std::string(expected) + ", got " + type_name(got));
  }
  // A lower-level error (secret file, workload label) with this reader's location in front.
  [[nodiscard]] tl::unexpected<core::Error> wrap(const std::string& path,
                                                 const core::Error& error) const {
    return fail(error.code, path, error.message);
  }

  [[nodiscard]] std::filesystem::path resolve(const std::string& path_text) const {
    const std::filesystem::path path(path_text);
    return path.is_absolute() ? path : (base_dir_ / path).lexically_normal();
  }

  [[nodiscard]] const Environment& environment() const { return environment_; }
  std::vector<std::string>& warnings() { return warnings_; }

  // The object's type and that every key is one of `allowed`.
  [[nodiscard]] Status expect_object(const json& value, const std::string& path,
                                     std::initializer_list<std::string_view> allowed) const {
    if (!value.is_object()) return wrong_type(path, "an object", value);
    for (const auto& [key, unused] : value.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        if (looks_like_url(key)) return invalid(path, "unknown field (name not shown)");
        return invalid(member(path, key), "unknown field");
      }
    }
    return {};
  }

  [[nodiscard]] Status read(const json& object, const std::string& path, std::string_view key,
                            std::string& out) const {
    const auto it = object.find(key);
    if (it == object.end()) return {};
    if (!it->is_string()) return wrong_type(member(path, key), "a string", *it);
    out = it->get<std::string>();
    return {};
  }

  [[nodiscard]] Status read_flag(const json& object, const std::string& path, std::string_view key,
                                 bool& out) const {
    const auto it = object.find(key);
    if (it == object.end()) return {};
    if (!it->is_boolean()) return wrong_type(member(path, key), "true or false", *it);
    out = it->get<bool>();
    return {};
  }

  [[nodiscard]] Status read_count(const json& object, const std::string& path, std::string_view key,
                                  std::size_t minimum, std::size_t maximum,
                                  std::size_t& out) const {
    const auto it = object.find(key);
    if (it == object.end()) return {};
    if (!it->is_number_integer()) return wrong_type(member(path, key), "an integer", *it);
    const bool negative = !it->is_number_unsigned();
    const std::uint64_t value = negative ? 0 : it->get<std::uint64_t>();
    if (negative || value < minimum || value > maximum) {
      return invalid(member(path, key), it->dump() + " is not between " + std::to_string(minimum) +
                                            " and " + std::to_string(maximum));
    }
    out = static_cast<std::size_t>(value);
    return {};
  }

  // A finite number in [minimum, maximum]; `exclusive_minimum` makes the lower bound open.
  [[nodiscard]] Status read_number(const json& object, const std::string& path,
                                   std::string_view key, double minimum, double maximum,
                                   bool exclusive_minimum, double& out) const {
    const auto it = object.find(key);
    if (it == object.end()) return {};
    if (!it->is_number()) return wrong_type(member(path, key), "a number", *it);
    const double value = it->get<double>();
    if (value < minimum || value > maximum || (exclusive_minimum && value == minimum)) {
      return invalid(member(path, key),
                     it->dump() + " is not " + (exclusive_minimum ? "above " : "at least ") +
                         json(minimum).dump() + " and at most " + json(maximum).dump());
    }
    out = value;
    return {};
  }

  [[nodiscard]] Status read_duration(const json& object, const std::string& path,
                                     std::string_view key, milliseconds minimum,
                                     milliseconds& out) const {
    const auto it = object.find(key);
    if (it == object.end()) return {};
    if (!it->is_string()) {
      return wrong_type(member(path, key), "a duration string like \"15m\"", *it);
    }
    auto duration = parse_duration(it->get<std::string>());
    if (!duration) return wrap(member(path, key), duration.error());
    if (*duration < minimum) {
      return invalid(member(path, key),
                     it->get<std::string>() + " is shorter than " + format_duration(minimum));
    }
    out = *duration;
    return {};
  }

 private:
  std::string source_;
  const Environment& environment_;
  std::filesystem::path base_dir_;
  std::vector<std::string> warnings_;
};

// --- secrets -------------------------------------------------------------------------------

enum class InlineValue { Allowed, Refused };
enum class Presence { Required, Optional };
enum class UnsetVariable { Fail, Ignore };

struct ResolvedSecret {
  std::string value;
  SecretSource source;
  std::string field;  // the field it came from, for later messages: "notifiers[0].url_env"
};

// One of `<name>`, `<name>_file`, `<name>_env`.
Result<ResolvedSecret> read_secret(Reader& reader, const json& object, const std::string& path,
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
                                     [&](const auto& key) { return object.contains(key); });
  if (present > 1) {
    return reader.invalid(
        path, (presence == Presence::Required ? "exactly one of " : "at most one of ") + choices);
  }
  if (present == 0) {
    if (presence == Presence::Required) return reader.invalid(path, "exactly one of " + choices);
    return ResolvedSecret{};
  }

  ResolvedSecret out;
  if (inline_value == InlineValue::Allowed && object.contains(name)) {
    out.field = member(path, name);
    const json& value = object.at(name);
    if (!value.is_string()) return reader.wrong_type(out.field, "a string", value);
    out.value = value.get<std::string>();
    out.source.origin = SecretOrigin::Inline;
    if (out.value.empty()) return reader.invalid(out.field, "is empty");
    return out;
  }
  if (object.contains(file_key)) {
    out.field = member(path, file_key);
    const json& value = object.at(file_key);
    if (!value.is_string()) return reader.wrong_type(out.field, "a file path", value);
    const std::string text = value.get<std::string>();
    if (looks_like_url(text)) {
      return reader.invalid(out.field,
                            "expected a file path, got what looks like a URL (not shown)");
    }
    if (text.empty()) return reader.invalid(out.field, "expected a file path, got \"\"");
    const auto file = reader.resolve(text);
    auto content = read_secret_file(file);
    if (!content) return reader.wrap(out.field, content.error());
    out.value = std::move(*content);
    out.source = SecretSource{SecretOrigin::File, file.string()};
    return out;
  }
  out.field = member(path, env_key);
  const json& value = object.at(env_key);
  if (!value.is_string()) return reader.wrong_type(out.field, "a variable name", value);
  const std::string variable = value.get<std::string>();
  out.source = SecretSource{SecretOrigin::Environment, variable};
  auto content = read_secret_env(reader.environment(), variable);
  if (!content) {
    if (content.error().code == ErrorCode::NotFound && unset == UnsetVariable::Ignore) {
      out.value.clear();
      return out;
    }
    return reader.wrap(out.field, content.error());
  }
  out.value = std::move(*content);
  return out;
}

// --- sections ------------------------------------------------------------------------------

Status read_storage(Reader& reader, const json& object, StorageConfig& out) {
  const std::string path = "storage";
  KW_CONFIG_TRY(reader.expect_object(object, path, {"path"}));
  std::string text = out.path.string();
  KW_CONFIG_TRY(reader.read(object, path, "path", text));
  if (text.empty()) return reader.invalid(member(path, "path"), "must not be empty");
  out.path = reader.resolve(text);
  return {};
}

bool host_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

Status parse_listen(const Reader& reader, const std::string& path, HttpConfig& out) {
  const std::string& text = out.listen;
  const auto bad = [&](std::string_view why) {
    return reader.invalid(path, shown(text) + " is not host:port like \"127.0.0.1:9477\" or " +
                                    "\"[::1]:9477\"" + std::string(why));
  };
  std::string host;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad("");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
    if (host.empty() || !std::all_of(host.begin(), host.end(), [](char c) {
          return c == ':' || c == '%' || host_char_ok(c);
        })) {
      return bad("");
    }
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return bad(" (the port is missing)");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad(" (write IPv6 addresses in brackets)");
    if (host.empty() || !std::all_of(host.begin(), host.end(), host_char_ok)) return bad("");
  }
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return bad("");
  }
  const long port = std::stol(port_text);
  if (port > 65535) return bad(" (the port is above 65535)");
  out.host = host;
  out.port = static_cast<std::uint16_t>(port);
  return {};
}

bool is_http_url(std::string_view text) {
  const std::string head = lower(text.substr(0, 8));
  return head.rfind("http://", 0) == 0 || head.rfind("https://", 0) == 0;
}

Status read_http(Reader& reader, const json& object, HttpConfig& out) {
  const std::string path = "http";
  KW_CONFIG_TRY(
      reader.expect_object(object, path, {"listen", "token_file", "token_env", "public_url"}));
  KW_CONFIG_TRY(reader.read(object, path, "listen", out.listen));
  KW_CONFIG_TRY(parse_listen(reader, member(path, "listen"), out));
  auto token = read_secret(reader, object, path, "token", InlineValue::Refused, Presence::Optional,
                           UnsetVariable::Ignore);
  if (!token) return tl::unexpected<core::Error>(token.error());
  out.token = token->value;
  out.token_source = token->source;
  if (token->source.origin == SecretOrigin::Environment && out.token.empty()) {
    reader.warnings().push_back(token->field + ": environment variable " + token->source.name +
                                " is not set; the mutating endpoints are disabled");
  }
  KW_CONFIG_TRY(reader.read(object, path, "public_url", out.public_url));
  if (!out.public_url.empty()) {
    if (!is_http_url(out.public_url) ||
        out.public_url.find_first_of(" \t\r\n") != std::string::npos) {
      return reader.invalid(member(path, "public_url"), "expected an http:// or https:// URL");
    }
    while (out.public_url.size() > 1 && out.public_url.back() == '/') out.public_url.pop_back();
  }
  return {};
}

Status read_backend(Reader& reader, const json& value, Backend& out) {
  if (!value.is_string()) return reader.wrong_type("backend", "a string", value);
  const std::string text = value.get<std::string>();
  if (text == "auto") {
    out = Backend::Auto;
  } else if (text == "cuda") {
    out = Backend::Cuda;
  } else if (text == "cpu") {
    out = Backend::Cpu;
  } else {
    return reader.invalid("backend", shown(text) + " is not one of auto, cuda, cpu");
  }
  return {};
}

Status read_schedule(Reader& reader, const json& object, ScheduleConfig& out) {
  const std::string path = "schedule";
  KW_CONFIG_TRY(reader.expect_object(object, path, {"interval", "jitter", "run_at_start"}));
  KW_CONFIG_TRY(
      reader.read_duration(object, path, "interval", std::chrono::seconds(1), out.interval));
  KW_CONFIG_TRY(reader.read_duration(object, path, "jitter", milliseconds(0), out.jitter));
  if (out.jitter >= out.interval) {
    return reader.invalid(member(path, "jitter"), format_duration(out.jitter) +
                                                      " is not shorter than schedule.interval (" +
                                                      format_duration(out.interval) + ")");
  }
  bool run_at_start = out.at_start == AtStart::Run;
  KW_CONFIG_TRY(reader.read_flag(object, path, "run_at_start", run_at_start));
  out.at_start = run_at_start ? AtStart::Run : AtStart::Wait;
  return {};
}

Result<Pass> parse_pass(const Reader& reader, const std::string& path, const std::string& text) {
  if (text == "forward") return Pass::Forward;
  if (text == "backward") return Pass::Backward;
  if (text == "full") return Pass::Full;
  return reader.invalid(path, shown(text) + " is not one of forward, backward, full");
}

Result<Provider> parse_provider(const Reader& reader, const std::string& path,
                                const std::string& text) {
  if (text == "kernelwatch-fused") return Provider::Fused;
  if (text == "kernelwatch-reference") return Provider::Reference;
  return reader.invalid(path,
                        shown(text) + " is not one of kernelwatch-fused, kernelwatch-reference");
}

std::string_view example_workload(core::KernelKind kernel) {
  return kernel == core::KernelKind::Tvd ? "tokens1024-vocab4096-fp32" : "hidden2048-rows2048-fp32";
}

Status read_benchmark(Reader& reader, const json& object, const std::string& path,
                      BenchmarkConfig& out) {
  KW_CONFIG_TRY(reader.expect_object(object, path, {"kernel", "pass", "providers", "workloads"}));
  for (const std::string_view key : {"kernel", "pass", "workloads"}) {
    if (!object.contains(key)) return reader.invalid(path, std::string(key) + " is missing");
  }
  std::string kernel;
  KW_CONFIG_TRY(reader.read(object, path, "kernel", kernel));
  if (kernel == "tvd") {
    out.kernel = core::KernelKind::Tvd;
  } else if (kernel == "layer_norm") {
    out.kernel = core::KernelKind::LayerNorm;
  } else {
    return reader.invalid(member(path, "kernel"), shown(kernel) + " is not one of tvd, layer_norm");
  }
  std::string pass;
  KW_CONFIG_TRY(reader.read(object, path, "pass", pass));
  auto parsed_pass = parse_pass(reader, member(path, "pass"), pass);
  if (!parsed_pass) return tl::unexpected<core::Error>(parsed_pass.error());
  out.pass = *parsed_pass;

  out.providers = {Provider::Fused, Provider::Reference};
  if (const auto it = object.find("providers"); it != object.end()) {
    const std::string providers_path = member(path, "providers");
    if (!it->is_array()) return reader.wrong_type(providers_path, "an array", *it);
    if (it->empty()) return reader.invalid(providers_path, "lists no provider");
    out.providers.clear();
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& value = (*it)[i];
      const std::string item_path = element(providers_path, i);
      if (!value.is_string()) return reader.wrong_type(item_path, "a string", value);
      auto provider = parse_provider(reader, item_path, value.get<std::string>());
      if (!provider) return tl::unexpected<core::Error>(provider.error());
      if (std::find(out.providers.begin(), out.providers.end(), *provider) != out.providers.end()) {
        return reader.invalid(item_path, shown(value.get<std::string>()) + " is listed twice");
      }
      out.providers.push_back(*provider);
    }
  }

  const std::string workloads_path = member(path, "workloads");
  const json& workloads = object.at("workloads");
  if (!workloads.is_array()) return reader.wrong_type(workloads_path, "an array", workloads);
  if (workloads.empty()) return reader.invalid(workloads_path, "lists no workload");
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const json& value = workloads[i];
    const std::string item_path = element(workloads_path, i);
    if (!value.is_string()) return reader.wrong_type(item_path, "a workload label", value);
    const std::string label = value.get<std::string>();
    auto workload = core::Workload::from_label(label);
    if (!workload) return reader.wrap(item_path, workload.error());
    if (workload->kernel != out.kernel) {
      if (workload->kernel == core::KernelKind::Other) {
        return reader.invalid(
            item_path, shown(label) + " is not a " + std::string(kernel_name(out.kernel)) +
                           " workload like \"" + std::string(example_workload(out.kernel)) + "\"");
      }
      return reader.invalid(
          item_path, shown(label) + " is a " + std::string(kernel_name(workload->kernel)) +
                         " workload, not a " + std::string(kernel_name(out.kernel)) + " one");
    }
    for (const auto& earlier : out.workloads) {
      if (earlier.label() == workload->label()) {
        return reader.invalid(item_path, shown(label) + " is listed twice");
      }
    }
    out.workloads.push_back(std::move(*workload));
  }
  return {};
}

Status read_benchmarks(Reader& reader, const json& value, std::vector<BenchmarkConfig>& out) {
  const std::string path = "benchmarks";
  if (!value.is_array()) return reader.wrong_type(path, "an array", value);
  for (std::size_t i = 0; i < value.size(); ++i) {
    BenchmarkConfig benchmark;
    const std::string item_path = element(path, i);
    KW_CONFIG_TRY(read_benchmark(reader, value[i], item_path, benchmark));
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].kernel == benchmark.kernel && out[j].pass == benchmark.pass) {
        return reader.invalid(item_path, std::string(kernel_name(benchmark.kernel)) + "/" +
                                             std::string(to_string(benchmark.pass)) +
                                             " is already listed in " + element(path, j));
      }
    }
    out.push_back(std::move(benchmark));
  }
  return {};
}

Status read_bench(Reader& reader, const json& object, BenchTiming& out) {
  const std::string path = "bench";
  KW_CONFIG_TRY(reader.expect_object(object, path, {"warmup", "repetitions"}));
  KW_CONFIG_TRY(reader.read_duration(object, path, "warmup", milliseconds(0), out.warmup));
  KW_CONFIG_TRY(
      reader.read_duration(object, path, "repetitions", milliseconds(1), out.repetitions));
  return {};
}

constexpr std::size_t kMaxWindow = 10'000;
constexpr double kHuge = 1e9;

Status read_detector(Reader& reader, const json& object, DetectorConfig& out) {
  const std::string path = "detector";
  KW_CONFIG_TRY(reader.expect_object(
      object, path,
      {"window", "min_history", "big_step_min_history", "big_step_threshold", "min_relative_margin",
       "spread_factor", "confirm_reruns", "repeat_interval", "drift", "controls"}));
  KW_CONFIG_TRY(reader.read_count(object, path, "window", 2, kMaxWindow, out.window));
  KW_CONFIG_TRY(reader.read_count(object, path, "min_history", 2, kMaxWindow, out.min_history));
  if (out.min_history > out.window) {
    return reader.invalid(member(path, "min_history"), std::to_string(out.min_history) +
                                                           " is larger than detector.window (" +
                                                           std::to_string(out.window) + ")");
  }
  KW_CONFIG_TRY(reader.read_count(object, path, "big_step_min_history", 1, kMaxWindow,
                                  out.big_step_min_history));
  if (out.big_step_min_history > out.min_history) {
    return reader.invalid(member(path, "big_step_min_history"),
                          std::to_string(out.big_step_min_history) +
                              " is larger than detector.min_history (" +
                              std::to_string(out.min_history) + ")");
  }
  KW_CONFIG_TRY(reader.read_number(object, path, "big_step_threshold", 0.0, kHuge, true,
                                   out.big_step_threshold));
  KW_CONFIG_TRY(reader.read_number(object, path, "min_relative_margin", 0.0, 1.0, false,
                                   out.min_relative_margin));
  KW_CONFIG_TRY(
      reader.read_number(object, path, "spread_factor", 0.0, kHuge, false, out.spread_factor));
  std::size_t reruns = static_cast<std::size_t>(out.confirm_reruns);
  KW_CONFIG_TRY(reader.read_count(object, path, "confirm_reruns", 0, 5, reruns));
  out.confirm_reruns = static_cast<int>(reruns);
  KW_CONFIG_TRY(
      reader.read_duration(object, path, "repeat_interval", milliseconds(0), out.repeat_interval));

  if (const auto it = object.find("drift"); it != object.end()) {
    const std::string drift_path = member(path, "drift");
    KW_CONFIG_TRY(reader.expect_object(*it, drift_path,
                                       {"window", "min_runs", "z_threshold", "min_total_change"}));
    KW_CONFIG_TRY(reader.read_count(*it, drift_path, "window", 3, kMaxWindow, out.drift.window));
    KW_CONFIG_TRY(
        reader.read_count(*it, drift_path, "min_runs", 3, kMaxWindow, out.drift.min_runs));
    if (out.drift.min_runs > out.drift.window) {
      return reader.invalid(member(drift_path, "min_runs"),
                            std::to_string(out.drift.min_runs) +
                                " is larger than detector.drift.window (" +
                                std::to_string(out.drift.window) + ")");
    }
    KW_CONFIG_TRY(reader.read_number(*it, drift_path, "z_threshold", 0.0, kHuge, true,
                                     out.drift.z_threshold));
    KW_CONFIG_TRY(reader.read_number(*it, drift_path, "min_total_change", 0.0, kHuge, false,
                                     out.drift.min_total_change));
  }

  if (const auto it = object.find("controls"); it != object.end()) {
    const std::string controls_path = member(path, "controls");
    KW_CONFIG_TRY(reader.expect_object(
        *it, controls_path,
        {"reference_providers", "cycle_gap", "environment_fraction", "environment_min_keys"}));
    if (const auto providers = it->find("reference_providers"); providers != it->end()) {
      const std::string providers_path = member(controls_path, "reference_providers");
      if (!providers->is_array()) return reader.wrong_type(providers_path, "an array", *providers);
      out.controls.reference_providers.clear();
      for (std::size_t i = 0; i < providers->size(); ++i) {
        const json& value = (*providers)[i];
        if (!value.is_string() || value.get<std::string>().empty()) {
          return reader.wrong_type(element(providers_path, i), "a provider name", value);
        }
        out.controls.reference_providers.push_back(value.get<std::string>());
      }
    }
    KW_CONFIG_TRY(reader.read_duration(*it, controls_path, "cycle_gap", std::chrono::seconds(1),
                                       out.controls.cycle_gap));
    KW_CONFIG_TRY(reader.read_number(*it, controls_path, "environment_fraction", 0.0, 1.0, true,
                                     out.controls.environment_fraction));
    KW_CONFIG_TRY(reader.read_count(*it, controls_path, "environment_min_keys", 1, kMaxWindow,
                                    out.controls.environment_min_keys));
  }
  return {};
}

bool name_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// An address in 127.0.0.0/8 or ::1, or "localhost"; not a name that merely starts like one
// ("127.evil.example").
bool is_loopback(std::string_view host) {
  std::string h = lower(host);
  if (h == "localhost") return true;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

// Scheme and host of a resolved notifier URL; messages name the field, never the URL.
Status check_notifier_url(const Reader& reader, const ResolvedSecret& url,
                          InsecureHttp insecure_http) {
  const std::string what =
      url.source.origin == SecretOrigin::File ? "the content of \"" + url.source.name + "\""
      : url.source.origin == SecretOrigin::Environment ? "the value of " + url.source.name
                                                       : "the value";
  if (url.value.find_first_of(" \t\r\n") != std::string::npos) {
    return reader.invalid(url.field, what + " contains whitespace (one URL expected)");
  }
  if (!is_http_url(url.value)) {
    return reader.invalid(url.field, what + " is not an http:// or https:// URL");
  }
  const bool plain_http = lower(url.value.substr(0, 7)) == "http://";
  std::string_view rest = url.value;
  rest.remove_prefix(plain_http ? 7 : 8);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);
  }
  std::string_view host = authority;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  if (host.empty()) return reader.invalid(url.field, what + " has no host");
  if (plain_http && insecure_http == InsecureHttp::Refuse && !is_loopback(host)) {
    return reader.invalid(url.field, what + " is plain http:// to a host other than loopback; " +
                                         "use https:// or set allow_insecure_http: true");
  }
  return {};
}

Status read_notifier(Reader& reader, const json& object, const std::string& path, std::size_t index,
                     NotifierConfig& out) {
  KW_CONFIG_TRY(reader.expect_object(
      object, path,
      {"type", "name", "url", "url_file", "url_env", "secret_file", "secret_env", "ca_file",
       "allow_insecure_http", "timeout", "min_interval", "backoff"}));
  if (!object.contains("type")) return reader.invalid(path, "type is missing");
  std::string type;
  KW_CONFIG_TRY(reader.read(object, path, "type", type));
  if (type == "slack") {
    out.type = NotifierType::Slack;
  } else if (type == "webhook") {
    out.type = NotifierType::Webhook;
  } else if (type == "alertmanager") {
    out.type = NotifierType::Alertmanager;
  } else {
    return reader.invalid(member(path, "type"),
                          shown(type) + " is not one of slack, webhook, alertmanager");
  }
  out.name = std::string(to_string(out.type)) + "-" + std::to_string(index);
  KW_CONFIG_TRY(reader.read(object, path, "name", out.name));
  if (out.name.empty() || out.name.size() > 64 ||
      !std::all_of(out.name.begin(), out.name.end(), name_char_ok)) {
    return reader.invalid(member(path, "name"),
                          shown(out.name) + " is not 1 to 64 of A-Z, a-z, 0-9, '.', '-', '_'");
  }

  bool allow_insecure = false;
  KW_CONFIG_TRY(reader.read_flag(object, path, "allow_insecure_http", allow_insecure));
  out.insecure_http = allow_insecure ? InsecureHttp::Allow : InsecureHttp::Refuse;

  auto url = read_secret(reader, object, path, "url", InlineValue::Allowed, Presence::Required,
                         UnsetVariable::Fail);
  if (!url) return tl::unexpected<core::Error>(url.error());
  KW_CONFIG_TRY(check_notifier_url(reader, *url, out.insecure_http));
  out.url = url->value;
  out.url_source = url->source;

  if (out.type != NotifierType::Webhook) {
    for (const std::string_view key : {"secret_file", "secret_env"}) {
      if (object.contains(key)) {
        return reader.invalid(member(path, key), "only webhook notifiers are signed");
      }
    }
  }
  auto secret = read_secret(reader, object, path, "secret", InlineValue::Refused,
                            Presence::Optional, UnsetVariable::Fail);
  if (!secret) return tl::unexpected<core::Error>(secret.error());
  out.secret = secret->value;
  out.secret_source = secret->source;

  std::string ca_file;
  KW_CONFIG_TRY(reader.read(object, path, "ca_file", ca_file));
  if (!ca_file.empty()) {
    out.ca_file = reader.resolve(ca_file);
    std::error_code error;
    if (!std::filesystem::is_regular_file(out.ca_file, error)) {
      return reader.fail(ErrorCode::NotFound, member(path, "ca_file"),
                         "\"" + out.ca_file.string() + "\" is not a readable file");
    }
  }

  KW_CONFIG_TRY(reader.read_duration(object, path, "timeout", milliseconds(1), out.timeout));
  if (object.contains("min_interval")) {
    milliseconds min_interval{0};
    KW_CONFIG_TRY(
        reader.read_duration(object, path, "min_interval", milliseconds(0), min_interval));
    out.min_interval = min_interval;
  }
  if (const auto it = object.find("backoff"); it != object.end()) {
    const std::string backoff_path = member(path, "backoff");
    KW_CONFIG_TRY(reader.expect_object(*it, backoff_path, {"base", "cap", "max_age"}));
    KW_CONFIG_TRY(
        reader.read_duration(*it, backoff_path, "base", milliseconds(1), out.backoff.base));
    KW_CONFIG_TRY(reader.read_duration(*it, backoff_path, "cap", milliseconds(1), out.backoff.cap));
    KW_CONFIG_TRY(
        reader.read_duration(*it, backoff_path, "max_age", milliseconds(1), out.backoff.max_age));
    if (out.backoff.cap < out.backoff.base) {
      return reader.invalid(member(backoff_path, "cap"),
                            format_duration(out.backoff.cap) + " is shorter than backoff.base (" +
                                format_duration(out.backoff.base) + ")");
    }
  }
  return {};
}

Status read_notifiers(Reader& reader, const json& value, std::vector<NotifierConfig>& out) {
  const std::string path = "notifiers";
  if (!value.is_array()) return reader.wrong_type(path, "an array", value);
  for (std::size_t i = 0; i < value.size(); ++i) {
    NotifierConfig notifier;
    const std::string item_path = element(path, i);
    KW_CONFIG_TRY(read_notifier(reader, value[i], item_path, i, notifier));
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].name == notifier.name) {
        return reader.invalid(member(item_path, "name"),
                              shown(notifier.name) + " is already the name of " + element(path, j));
      }
    }
    out.push_back(std::move(notifier));
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
  if (!document.is_object()) return reader.wrong_type("", "an object at the top level", document);
  KW_CONFIG_TRY(reader.expect_object(
      document, "",
      {"storage", "http", "backend", "schedule", "benchmarks", "bench", "detector", "notifiers"}));
  config.storage.path = reader.resolve(config.storage.path.string());
  if (const auto it = document.find("storage"); it != document.end()) {
    KW_CONFIG_TRY(read_storage(reader, *it, config.storage));
  }
  if (const auto it = document.find("http"); it != document.end()) {
    KW_CONFIG_TRY(read_http(reader, *it, config.http));
  }
  if (const auto it = document.find("backend"); it != document.end()) {
    KW_CONFIG_TRY(read_backend(reader, *it, config.backend));
  }
  if (const auto it = document.find("schedule"); it != document.end()) {
    KW_CONFIG_TRY(read_schedule(reader, *it, config.schedule));
  }
  if (const auto it = document.find("benchmarks"); it != document.end()) {
    KW_CONFIG_TRY(read_benchmarks(reader, *it, config.benchmarks));
  }
  if (const auto it = document.find("bench"); it != document.end()) {
    KW_CONFIG_TRY(read_bench(reader, *it, config.bench));
  }
  if (const auto it = document.find("detector"); it != document.end()) {
    KW_CONFIG_TRY(read_detector(reader, *it, config.detector));
  }
  if (const auto it = document.find("notifiers"); it != document.end()) {
    KW_CONFIG_TRY(read_notifiers(reader, *it, config.notifiers));
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

std::string_view to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::Auto:
      return "auto";
    case Backend::Cuda:
      return "cuda";
    case Backend::Cpu:
      return "cpu";
  }
  return "auto";
}

std::string_view to_string(Pass pass) noexcept {
  switch (pass) {
    case Pass::Forward:
      return "forward";
    case Pass::Backward:
      return "backward";
    case Pass::Full:
      return "full";
  }
  return "forward";
}

std::string_view to_string(Provider provider) noexcept {
  switch (provider) {
    case Provider::Fused:
      return "kernelwatch-fused";
    case Provider::Reference:
      return "kernelwatch-reference";
  }
  return "kernelwatch-fused";
}

std::string_view to_string(NotifierType type) noexcept {
  switch (type) {
    case NotifierType::Slack:
      return "slack";
    case NotifierType::Webhook:
      return "webhook";
    case NotifierType::Alertmanager:
      return "alertmanager";
  }
  return "webhook";
}

std::string_view kernel_name(core::KernelKind kernel) noexcept {
  switch (kernel) {
    case core::KernelKind::LayerNorm:
      return "layer_norm";
    case core::KernelKind::Tvd:
      return "tvd";
    case core::KernelKind::Other:
      return "other";
  }
  return "other";
}

Result<Config> parse_config(std::string_view json_text, std::string_view source_name,
                            const Environment& environment, const std::filesystem::path& base_dir) {
  Reader reader(source_name, environment, base_dir);
  json document;
  try {
    document = json::parse(json_text);
  } catch (const json::parse_error& error) {
    return core::fail(ErrorCode::ParseError, describe_parse_error(source_name, json_text, error));
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
  auto config = parse_config(text, source, environment, absolute.parent_path());
  if (!config) return config;

  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & S_IROTH) != 0) {
    for (std::size_t i = 0; i < config->notifiers.size(); ++i) {
      if (config->notifiers[i].url_source.origin == SecretOrigin::Inline) {
        config->warnings.push_back("notifiers[" + std::to_string(i) + "].url is written in " +
                                   source +
                                   ", which is readable by others; prefer url_file or url_env");
      }
    }
  }
  return config;
}

json redacted_json(const Config& config) {
  json out = json::object();
  out["storage"] = {{"path", config.storage.path.string()}};
  json http = {{"listen", config.http.listen}, {"public_url", config.http.public_url}};
  secret_json(http, "token", config.http.token, config.http.token_source);
  out["http"] = http;
  out["backend"] = to_string(config.backend);
  out["schedule"] = {{"interval", format_duration(config.schedule.interval)},
                     {"jitter", format_duration(config.schedule.jitter)},
                     {"run_at_start", config.schedule.at_start == AtStart::Run}};
  json benchmarks = json::array();
  for (const auto& benchmark : config.benchmarks) {
    json providers = json::array();
    for (const auto provider : benchmark.providers) providers.push_back(to_string(provider));
    json workloads = json::array();
    for (const auto& workload : benchmark.workloads) workloads.push_back(workload.label());
    benchmarks.push_back({{"kernel", kernel_name(benchmark.kernel)},
                          {"pass", to_string(benchmark.pass)},
                          {"providers", providers},
                          {"workloads", workloads}});
  }
  out["benchmarks"] = benchmarks;
  out["bench"] = {{"warmup", format_duration(config.bench.warmup)},
                  {"repetitions", format_duration(config.bench.repetitions)}};
  const DetectorConfig& d = config.detector;
  out["detector"] = {
      {"window", d.window},
      {"min_history", d.min_history},
      {"big_step_min_history", d.big_step_min_history},
      {"big_step_threshold", d.big_step_threshold},
      {"min_relative_margin", d.min_relative_margin},
      {"spread_factor", d.spread_factor},
      {"confirm_reruns", d.confirm_reruns},
      {"repeat_interval", format_duration(d.repeat_interval)},
      {"drift",
       {{"window", d.drift.window},
        {"min_runs", d.drift.min_runs},
        {"z_threshold", d.drift.z_threshold},
        {"min_total_change", d.drift.min_total_change}}},
      {"controls",
       {{"reference_providers", d.controls.reference_providers},
        {"cycle_gap", format_duration(d.controls.cycle_gap)},
        {"environment_fraction", d.controls.environment_fraction},
        {"environment_min_keys", d.controls.environment_min_keys}}},
  };
  json notifiers = json::array();
  for (const auto& n : config.notifiers) {
    json entry = {{"type", to_string(n.type)},
                  {"name", n.name},
                  {"allow_insecure_http", n.insecure_http == InsecureHttp::Allow},
                  {"timeout", format_duration(n.timeout)},
                  {"backoff",
                   {{"base", format_duration(n.backoff.base)},
                    {"cap", format_duration(n.backoff.cap)},
                    {"max_age", format_duration(n.backoff.max_age)}}}};
    secret_json(entry, "url", n.url, n.url_source);
    secret_json(entry, "secret", n.secret, n.secret_source);
    if (!n.ca_file.empty()) entry["ca_file"] = n.ca_file.string();
    if (n.min_interval) entry["min_interval"] = format_duration(*n.min_interval);
    notifiers.push_back(entry);
  }
  out["notifiers"] = notifiers;
  return out;
}

}  // namespace kernelwatch::config
