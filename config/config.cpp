#include "config/config.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <type_traits>
#include <utility>

#include "config/duration.hpp"

namespace kernelwatch::config {
namespace {

using core::ErrorCode;
using core::Status;
using json = nlohmann::json;
using notifiers::InsecureHttp;
using std::chrono::milliseconds;

constexpr std::string_view kRedacted = "<redacted>";

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

// Whether a number's lower bound is itself allowed.
enum class LowerBound { Closed, Open };

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
                                     const std::vector<std::string_view>& allowed) const {
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

  // A finite number in [minimum, maximum], or (minimum, maximum] when the lower bound is open.
  [[nodiscard]] Status read_number(const json& object, const std::string& path,
                                   std::string_view key, double minimum, double maximum,
                                   LowerBound lower, double& out) const {
    const auto it = object.find(key);
    if (it == object.end()) return {};
    if (!it->is_number()) return wrong_type(member(path, key), "a number", *it);
    const double value = it->get<double>();
    const bool open = lower == LowerBound::Open;
    if (value < minimum || value > maximum || (open && value == minimum)) {
      return invalid(member(path, key), it->dump() + " is not " + (open ? "above " : "at least ") +
                                            json(minimum).dump() + " and at most " +
                                            json(maximum).dump());
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
  KW_TRY(reader.expect_object(object, path, {"path"}));
  std::string text = out.path.string();
  KW_TRY(reader.read(object, path, "path", text));
  if (text.empty()) return reader.invalid(member(path, "path"), "must not be empty");
  out.path = reader.resolve(text);
  return {};
}

// A-Z, a-z, 0-9, '.', '-', '_': host names and notifier names.
bool word_char_ok(char c) {
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
          return c == ':' || c == '%' || word_char_ok(c);
        })) {
      return bad("");
    }
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return bad(" (the port is missing)");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad(" (write IPv6 addresses in brackets)");
    if (host.empty() || !std::all_of(host.begin(), host.end(), word_char_ok)) return bad("");
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
  KW_TRY(reader.expect_object(object, path, {"listen", "token_file", "token_env", "public_url"}));
  KW_TRY(reader.read(object, path, "listen", out.listen));
  KW_TRY(parse_listen(reader, member(path, "listen"), out));
  const ResolvedSecret token =
      KW_TRY(read_secret(reader, object, path, "token", InlineValue::Refused, Presence::Optional,
                         UnsetVariable::Ignore));
  out.token = token.value;
  out.token_source = token.source;
  if (token.source.origin == SecretOrigin::Environment && out.token.empty()) {
    reader.warnings().push_back(token.field + ": environment variable " + token.source.name +
                                " is not set; the mutating endpoints are disabled");
  }
  KW_TRY(reader.read(object, path, "public_url", out.public_url));
  if (!out.public_url.empty()) {
    if (!is_http_url(out.public_url) ||
        out.public_url.find_first_of(" \t\r\n") != std::string::npos) {
      return reader.invalid(member(path, "public_url"), "expected an http:// or https:// URL");
    }
    while (out.public_url.size() > 1 && out.public_url.back() == '/') out.public_url.pop_back();
  }
  return {};
}

// "auto" is nullopt: the daemon picks CUDA when it finds a GPU.
Status read_backend(Reader& reader, const json& value, std::optional<kernels::Backend>& out) {
  if (!value.is_string()) return reader.wrong_type("backend", "a string", value);
  const std::string text = value.get<std::string>();
  if (text == "auto") {
    out.reset();
    return {};
  }
  const auto backend = kernels::parse_backend(text);
  if (!backend) return reader.invalid("backend", shown(text) + " is not one of auto, cuda, cpu");
  out = *backend;
  return {};
}

std::string_view backend_name(const std::optional<kernels::Backend>& backend) {
  return backend ? kernels::to_string(*backend) : "auto";
}

Status read_schedule(Reader& reader, const json& object, ScheduleConfig& out) {
  const std::string path = "schedule";
  KW_TRY(reader.expect_object(object, path, {"interval", "jitter", "run_at_start"}));
  KW_TRY(reader.read_duration(object, path, "interval", std::chrono::seconds(1), out.interval));
  KW_TRY(reader.read_duration(object, path, "jitter", milliseconds(0), out.jitter));
  if (out.jitter >= out.interval) {
    return reader.invalid(member(path, "jitter"), format_duration(out.jitter) +
                                                      " is not shorter than schedule.interval (" +
                                                      format_duration(out.interval) + ")");
  }
  bool run_at_start = out.at_start == AtStart::Run;
  KW_TRY(reader.read_flag(object, path, "run_at_start", run_at_start));
  out.at_start = run_at_start ? AtStart::Run : AtStart::Wait;
  return {};
}

// A kernel, pass or provider name, parsed by core; the message lists the accepted names and
// quotes the text only when it cannot be a secret.
template <class Enum, std::size_t N>
Result<Enum> read_name(const Reader& reader, const std::string& path, const std::string& text,
                       Result<Enum> (*parse)(std::string_view), const Enum (&values)[N]) {
  auto parsed = parse(text);
  if (!parsed) {
    return reader.invalid(path, shown(text) + " is not one of " + core::names_of(values));
  }
  return parsed;
}

std::string_view example_workload(core::Kernel kernel) {
  return kernel == core::Kernel::Tvd ? "tokens1024-vocab4096-fp32" : "hidden2048-rows2048-fp32";
}

// The fields of a liger-bench entry: providers (required, each valid for the kernel), python
// (required), script (must exist), timeout.
Status read_liger_bench(Reader& reader, const json& object, const std::string& path,
                        BenchmarkConfig& out) {
  const std::string providers_path = member(path, "providers");
  const auto it = object.find("providers");
  if (it == object.end()) {
    return reader.invalid(path, "providers is missing (liger-bench runs " +
                                    runners::providers_of(out.kernel) + " for " +
                                    std::string(core::to_string(out.kernel)) + ")");
  }
  if (!it->is_array()) return reader.wrong_type(providers_path, "an array", *it);
  if (it->empty()) return reader.invalid(providers_path, "lists no provider");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& value = (*it)[i];
    const std::string item_path = element(providers_path, i);
    if (!value.is_string()) return reader.wrong_type(item_path, "a string", value);
    const std::string text = value.get<std::string>();
    auto provider = runners::parse_liger_provider(text);
    if (!provider || !runners::supports(out.kernel, *provider)) {
      return reader.invalid(item_path, shown(text) + " is not a provider liger-bench runs for " +
                                           std::string(core::to_string(out.kernel)) + " (" +
                                           runners::providers_of(out.kernel) + ")");
    }
    if (std::find(out.liger_providers.begin(), out.liger_providers.end(), *provider) !=
        out.liger_providers.end()) {
      return reader.invalid(item_path, shown(text) + " is listed twice");
    }
    out.liger_providers.push_back(*provider);
  }
  if (!object.contains("python")) {
    return reader.invalid(path,
                          "python is missing (the interpreter of a venv with torch, triton "
                          "and liger-kernel, like \"/opt/venv/bin/python3\")");
  }
  std::string python;
  KW_TRY(reader.read(object, path, "python", python));
  if (python.empty()) return reader.invalid(member(path, "python"), "is empty");
  // A bare name is looked up in PATH when the runner starts; a path is taken relative to the
  // config file. A missing interpreter is a failed run, not a config error (venvs come and go).
  out.liger.python = python.find('/') == std::string::npos ? std::filesystem::path(python)
                                                           : reader.resolve(python);
  std::string script;
  KW_TRY(reader.read(object, path, "script", script));
  if (object.contains("script")) {
    out.liger.script = reader.resolve(script);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(out.liger.script, ec)) {
      return reader.invalid(member(path, "script"),
                            "\"" + out.liger.script.string() + "\" is not a file");
    }
  }
  KW_TRY(reader.read_duration(object, path, "timeout", std::chrono::seconds(1), out.liger.timeout));
  return {};
}

Status read_benchmark(Reader& reader, const json& object, const std::string& path,
                      BenchmarkConfig& out) {
  KW_TRY(reader.expect_object(
      object, path,
      {"runner", "kernel", "pass", "providers", "workloads", "python", "script", "timeout"}));
  for (const std::string_view key : {"kernel", "pass", "workloads"}) {
    if (!object.contains(key)) return reader.invalid(path, std::string(key) + " is missing");
  }
  std::string runner;
  KW_TRY(reader.read(object, path, "runner", runner));
  if (object.contains("runner")) {
    if (runner != runners::kLigerBenchRunner) {
      return reader.invalid(member(path, "runner"),
                            shown(runner) + " is not a known runner (known: " +
                                std::string(runners::kLigerBenchRunner) +
                                "; leave it out for kernelwatch's own kernels)");
    }
    out.runner = Runner::LigerBench;
  } else {
    for (const std::string_view key : {"python", "script", "timeout"}) {
      if (object.contains(key)) {
        return reader.invalid(member(path, key), "applies to a benchmark with a \"runner\"");
      }
    }
  }
  const bool liger = out.runner == Runner::LigerBench;
  std::string kernel;
  KW_TRY(reader.read(object, path, "kernel", kernel));
  out.kernel =
      KW_TRY(read_name(reader, member(path, "kernel"), kernel, core::parse_kernel, core::kKernels));
  std::string pass;
  KW_TRY(reader.read(object, path, "pass", pass));
  out.pass = KW_TRY(read_name(reader, member(path, "pass"), pass, core::parse_pass, core::kPasses));

  if (liger) {
    KW_TRY(read_liger_bench(reader, object, path, out));
  } else {
    out.providers.assign(std::begin(core::kProviders), std::end(core::kProviders));
  }
  if (const auto it = object.find("providers"); !liger && it != object.end()) {
    const std::string providers_path = member(path, "providers");
    if (!it->is_array()) return reader.wrong_type(providers_path, "an array", *it);
    if (it->empty()) return reader.invalid(providers_path, "lists no provider");
    out.providers.clear();
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& value = (*it)[i];
      const std::string item_path = element(providers_path, i);
      if (!value.is_string()) return reader.wrong_type(item_path, "a string", value);
      const std::string text = value.get<std::string>();
      const core::Provider provider =
          KW_TRY(read_name(reader, item_path, text, core::parse_provider, core::kProviders));
      if (std::find(out.providers.begin(), out.providers.end(), provider) != out.providers.end()) {
        return reader.invalid(item_path, shown(text) + " is listed twice");
      }
      out.providers.push_back(provider);
    }
  }

  const std::string workloads_path = member(path, "workloads");
  const json& workloads = object.at("workloads");
  if (!workloads.is_array()) return reader.wrong_type(workloads_path, "an array", workloads);
  if (workloads.empty()) return reader.invalid(workloads_path, "lists no workload");
  const std::string kernel_name(core::to_string(out.kernel));
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const json& value = workloads[i];
    const std::string item_path = element(workloads_path, i);
    if (!value.is_string()) return reader.wrong_type(item_path, "a workload label", value);
    const std::string label = value.get<std::string>();
    auto workload = core::Workload::from_label(label);
    if (!workload) return reader.wrap(item_path, workload.error());
    if (!workload->kernel) {
      return reader.invalid(item_path, shown(label) + " is not a " + kernel_name +
                                           " workload like \"" +
                                           std::string(example_workload(out.kernel)) + "\"");
    }
    if (*workload->kernel != out.kernel) {
      return reader.invalid(item_path, shown(label) + " is a " +
                                           std::string(core::to_string(*workload->kernel)) +
                                           " workload, not a " + kernel_name + " one");
    }
    for (const auto& earlier : out.workloads) {
      if (earlier.label() == workload->label()) {
        return reader.invalid(item_path, shown(label) + " is listed twice");
      }
    }
    if (liger) {
      for (const auto provider : out.liger_providers) {
        const runners::LigerCase c{out.kernel, out.pass, provider, *workload};
        if (auto ok = runners::validate(c); !ok)
          return reader.invalid(item_path, ok.error().message);
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
    KW_TRY(read_benchmark(reader, value[i], item_path, benchmark));
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].runner == benchmark.runner && out[j].kernel == benchmark.kernel &&
          out[j].pass == benchmark.pass) {
        return reader.invalid(item_path, std::string(core::to_string(benchmark.kernel)) + "/" +
                                             std::string(core::to_string(benchmark.pass)) +
                                             " is already listed in " + element(path, j));
      }
    }
    out.push_back(std::move(benchmark));
  }
  return {};
}

Status read_bench(Reader& reader, const json& object, kernels::TimingPolicy& out) {
  const std::string path = "bench";
  KW_TRY(reader.expect_object(object, path, {"warmup", "repetitions"}));
  KW_TRY(reader.read_duration(object, path, "warmup", milliseconds(0), out.warmup));
  KW_TRY(reader.read_duration(object, path, "repetitions", milliseconds(1), out.repetitions));
  return {};
}

// --- detector: one table serves the parser and the effective config ------------------------

// One setting of the `detector` section: its name there ("window", "drift.min_runs"), how it is
// read into DetectorSettings (the key is present), its value in the effective config, and the
// earlier count setting it may not exceed, if any.
struct DetectorSetting {
  std::string_view name;
  std::function<Status(const Reader&, const json& section, const std::string& section_path,
                       std::string_view key, DetectorSettings&)>
      read;
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
          [=](const Reader& reader, const json& section, const std::string& path,
              std::string_view key, DetectorSettings& settings) -> Status {
            T& out = part_of<Owner>(settings).*slot;
            auto value = static_cast<std::size_t>(out);
            KW_TRY(reader.read_count(section, path, key, minimum, maximum, value));
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
          [=](const Reader& reader, const json& section, const std::string& path,
              std::string_view key, DetectorSettings& settings) -> Status {
            return reader.read_number(section, path, key, minimum, maximum, lower,
                                      part_of<Owner>(settings).*slot);
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
      [=](const Reader& reader, const json& section, const std::string& path, std::string_view key,
          DetectorSettings& settings) -> Status {
        Duration& out = part_of<Owner>(settings).*slot;
        auto value =
            static_cast<std::size_t>(duration_cast<std::chrono::microseconds>(out).count());
        KW_TRY(reader.read_count(section, path, key, minimum, maximum, value));
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
          [=](const Reader& reader, const json& section, const std::string& path,
              std::string_view key, DetectorSettings& settings) -> Status {
            milliseconds value{0};
            KW_TRY(reader.read_duration(section, path, key, minimum, value));
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
          [=](const Reader& reader, const json& section, const std::string& path,
              std::string_view key, DetectorSettings& settings) -> Status {
            const std::string list_path = member(path, key);
            const json& list = section.at(key);
            if (!list.is_array()) return reader.wrong_type(list_path, "an array", list);
            std::vector<std::string> names;
            for (std::size_t i = 0; i < list.size(); ++i) {
              const json& value = list[i];
              if (!value.is_string() || value.get<std::string>().empty()) {
                return reader.wrong_type(element(list_path, i), "a provider name", value);
              }
              names.push_back(value.get<std::string>());
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

Status read_detector(Reader& reader, const json& given, DetectorSettings& out) {
  const std::string path = "detector";
  json object = given;
  for (const auto& [section, key, why] : kRetiredSettings) {
    const auto holder = object.find(section);
    if (holder == object.end() || !holder->is_object() || !holder->contains(key)) continue;
    holder->erase(std::string(key));
    reader.warnings().push_back(member(member(path, section), key) + " is no longer used (" +
                                std::string(why) + "); it is ignored");
  }
  KW_TRY(reader.expect_object(object, path, detector_keys("")));
  std::string_view checked_section;
  for (const DetectorSetting& setting : detector_settings()) {
    const auto [section, key] = split_setting(setting.name);
    const json* holder = &object;
    std::string holder_path = path;
    if (!section.empty()) {
      const auto it = object.find(section);
      holder = it == object.end() ? nullptr : &*it;
      holder_path = member(path, section);
      if (holder != nullptr && section != checked_section) {
        KW_TRY(reader.expect_object(*holder, holder_path, detector_keys(section)));
        checked_section = section;
      }
    }
    if (holder != nullptr && holder->contains(key)) {
      KW_TRY(setting.read(reader, *holder, holder_path, key, out));
    }
    if (!setting.at_most.empty()) {
      const DetectorSetting& bound = detector_setting(setting.at_most);
      const auto value = setting.value(out).get<std::size_t>();
      const auto limit = bound.value(out).get<std::size_t>();
      if (value > limit) {
        return reader.invalid(member(path, setting.name),
                              std::to_string(value) + " is larger than " +
                                  member(path, bound.name) + " (" + std::to_string(limit) + ")");
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

// The notifiers' own rule (an address in 127.0.0.0/8 or ::1, or "localhost"; not a name that
// merely starts like one), for a host as the URL spells it: any case, IPv6 in brackets.
bool is_loopback(std::string_view host) {
  std::string h = lower(host);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return notifiers::is_loopback_host(h);
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
                     Notifier& out) {
  notifiers::Destination& destination = out.destination;
  KW_TRY(reader.expect_object(
      object, path,
      {"type", "name", "url", "url_file", "url_env", "secret_file", "secret_env", "ca_file",
       "allow_insecure_http", "timeout", "min_interval", "backoff"}));
  if (!object.contains("type")) return reader.invalid(path, "type is missing");
  std::string type;
  KW_TRY(reader.read(object, path, "type", type));
  const auto parsed_type = notifiers::parse_destination_type(type);
  if (!parsed_type) {
    return reader.invalid(member(path, "type"),
                          shown(type) + " is not one of slack, webhook, alertmanager");
  }
  destination.type = *parsed_type;
  destination.name =
      std::string(notifiers::to_string(destination.type)) + "-" + std::to_string(index);
  KW_TRY(reader.read(object, path, "name", destination.name));
  const std::string& name = destination.name;
  if (name.empty() || name.size() > 64 || !std::all_of(name.begin(), name.end(), word_char_ok)) {
    return reader.invalid(member(path, "name"),
                          shown(name) + " is not 1 to 64 of A-Z, a-z, 0-9, '.', '-', '_'");
  }

  bool allow_insecure = false;
  KW_TRY(reader.read_flag(object, path, "allow_insecure_http", allow_insecure));
  destination.insecure_http = allow_insecure ? InsecureHttp::Allow : InsecureHttp::Refuse;

  const ResolvedSecret url = KW_TRY(read_secret(reader, object, path, "url", InlineValue::Allowed,
                                                Presence::Required, UnsetVariable::Fail));
  KW_TRY(check_notifier_url(reader, url, destination.insecure_http));
  destination.url = url.value;
  out.url_source = url.source;

  if (destination.type != notifiers::DestinationType::Webhook) {
    for (const std::string_view key : {"secret_file", "secret_env"}) {
      if (object.contains(key)) {
        return reader.invalid(member(path, key), "only webhook notifiers are signed");
      }
    }
  }
  const ResolvedSecret secret =
      KW_TRY(read_secret(reader, object, path, "secret", InlineValue::Refused, Presence::Optional,
                         UnsetVariable::Fail));
  destination.secret = secret.value;
  out.secret_source = secret.source;

  std::string ca_file;
  KW_TRY(reader.read(object, path, "ca_file", ca_file));
  if (!ca_file.empty()) {
    destination.ca_file = reader.resolve(ca_file).string();
    std::error_code error;
    if (!std::filesystem::is_regular_file(destination.ca_file, error)) {
      return reader.fail(ErrorCode::NotFound, member(path, "ca_file"),
                         "\"" + destination.ca_file + "\" is not a readable file");
    }
  }

  // One `timeout` bounds each step of a delivery alike.
  milliseconds timeout = destination.timeouts.read;
  KW_TRY(reader.read_duration(object, path, "timeout", milliseconds(1), timeout));
  destination.timeouts = {timeout, timeout, timeout, timeout, timeout};
  if (object.contains("min_interval")) {
    milliseconds min_interval{0};
    KW_TRY(reader.read_duration(object, path, "min_interval", milliseconds(0), min_interval));
    destination.min_interval = min_interval;
  }
  if (const auto it = object.find("backoff"); it != object.end()) {
    notifiers::Backoff& backoff = destination.backoff;
    const std::string backoff_path = member(path, "backoff");
    KW_TRY(reader.expect_object(*it, backoff_path, {"base", "cap", "max_age"}));
    KW_TRY(reader.read_duration(*it, backoff_path, "base", milliseconds(1), backoff.base));
    KW_TRY(reader.read_duration(*it, backoff_path, "cap", milliseconds(1), backoff.cap));
    KW_TRY(reader.read_duration(*it, backoff_path, "max_age", milliseconds(1), backoff.max_age));
    if (backoff.cap < backoff.base) {
      return reader.invalid(member(backoff_path, "cap"), format_duration(backoff.cap) +
                                                             " is shorter than backoff.base (" +
                                                             format_duration(backoff.base) + ")");
    }
  }
  return {};
}

Status read_notifiers(Reader& reader, const json& value, std::vector<Notifier>& out) {
  const std::string path = "notifiers";
  if (!value.is_array()) return reader.wrong_type(path, "an array", value);
  for (std::size_t i = 0; i < value.size(); ++i) {
    Notifier notifier;
    const std::string item_path = element(path, i);
    KW_TRY(read_notifier(reader, value[i], item_path, i, notifier));
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].destination.name == notifier.destination.name) {
        return reader.invalid(
            member(item_path, "name"),
            shown(notifier.destination.name) + " is already the name of " + element(path, j));
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
  KW_TRY(reader.expect_object(
      document, "",
      {"storage", "http", "backend", "schedule", "benchmarks", "bench", "detector", "notifiers"}));
  config.storage.path = reader.resolve(config.storage.path.string());
  if (const auto it = document.find("storage"); it != document.end()) {
    KW_TRY(read_storage(reader, *it, config.storage));
  }
  if (const auto it = document.find("http"); it != document.end()) {
    KW_TRY(read_http(reader, *it, config.http));
  }
  if (const auto it = document.find("backend"); it != document.end()) {
    KW_TRY(read_backend(reader, *it, config.backend));
  }
  if (const auto it = document.find("schedule"); it != document.end()) {
    KW_TRY(read_schedule(reader, *it, config.schedule));
  }
  if (const auto it = document.find("benchmarks"); it != document.end()) {
    KW_TRY(read_benchmarks(reader, *it, config.benchmarks));
  }
  if (const auto it = document.find("bench"); it != document.end()) {
    KW_TRY(read_bench(reader, *it, config.bench));
  }
  if (const auto it = document.find("detector"); it != document.end()) {
    KW_TRY(read_detector(reader, *it, config.detector));
  }
  if (const auto it = document.find("notifiers"); it != document.end()) {
    KW_TRY(read_notifiers(reader, *it, config.notifiers));
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
  out["backend"] = backend_name(config.backend);
  out["schedule"] = {{"interval", format_duration(config.schedule.interval)},
                     {"jitter", format_duration(config.schedule.jitter)},
                     {"run_at_start", config.schedule.at_start == AtStart::Run}};
  json benchmarks = json::array();
  for (const auto& benchmark : config.benchmarks) {
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
    json entry = {{"type", notifiers::to_string(d.type)},
                  {"name", d.name},
                  {"allow_insecure_http", d.insecure_http == InsecureHttp::Allow},
                  {"timeout", format_duration(d.timeouts.read)},
                  {"backoff",
                   {{"base", format_duration(d.backoff.base)},
                    {"cap", format_duration(d.backoff.cap)},
                    {"max_age", format_duration(d.backoff.max_age)}}}};
    secret_json(entry, "url", d.url, n.url_source);
    secret_json(entry, "secret", d.secret, n.secret_source);
    if (!d.ca_file.empty()) entry["ca_file"] = d.ca_file;
    if (d.min_interval) entry["min_interval"] = format_duration(*d.min_interval);
    notifier_list.push_back(entry);
  }
  out["notifiers"] = notifier_list;
  return out;
}

}  // namespace kernelwatch::config
