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

#include "config/detail/benchmark_config.hpp"
#include "config/detail/detector_config.hpp"
#include "config/detail/reader.hpp"
#include "config/duration.hpp"
#include "config/metrics.hpp"
#include "core/json_fields.hpp"
#include "core/json_limits.hpp"
#include "core/url.hpp"
#include "notifiers/integration.hpp"

namespace kernelwatch::config {
namespace {

using namespace detail;
using notifiers::InsecureHttp;

constexpr std::string_view kRedacted = "<redacted>";

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

bool word_char_ok(char c);
bool schema_name_ok(std::string_view name);

Status read_storage(const Reader& reader, const JsonField& field, StorageConfig& out) {
  const JsonField object =
      KW_TRY(object_of(field, {"path", "postgresql", "schema", "warm_start", "fleet_controls"}));
  out.warm_start = KW_TRY(object["warm_start"].boolean_or(false));
  out.fleet_controls = KW_TRY(object["fleet_controls"].boolean_or(false));
  const std::string text = KW_TRY(object["path"].string_or(out.path.string()));
  if (text.empty()) return object["path"].error("must not be empty");
  out.path = reader.resolve(text);
  const auto warm_start_needs_schema = [&]() -> Status {
    return object[out.warm_start ? "warm_start" : "fleet_controls"].error(
        "reads the other hosts' schemas of a PostgreSQL database that several daemons share: it "
        "needs storage.postgresql and storage.schema (docs/FLEET.md)");
  };
  if (!object["postgresql"].present()) {
    if (object["schema"].present()) {
      return object["schema"].error("is a PostgreSQL schema: give storage.postgresql with it");
    }
    if (out.warm_start || out.fleet_controls) return warm_start_needs_schema();
    return {};
  }
  if (object["path"].present()) {
    return object["postgresql"].error(
        "give path (a SQLite file) or postgresql (a PostgreSQL database), not both");
  }
  const std::string database = KW_TRY(object["postgresql"].string_or(""));
  if (database.starts_with("postgresql://") || database.starts_with("postgres://")) {
    out.postgresql = database;
  } else {
    const bool service_name =
        !database.empty() && database.size() <= 64 &&
        std::all_of(database.begin(), database.end(), [](char c) { return word_char_ok(c); });
    if (!service_name) {
      return object["postgresql"].error(
          "is neither a postgresql:// URL nor a service name of pg_service.conf (letters, "
          "digits, '.', '-', '_')");
    }
    out.postgresql = "postgresql:///?service=" + database;
  }
  if (!object["schema"].present()) {
    if (out.warm_start || out.fleet_controls) return warm_start_needs_schema();
    return {};
  }
  out.schema = KW_TRY(object["schema"].string_or(""));
  if (!schema_name_ok(out.schema)) {
    return object["schema"].error(
        "must be a PostgreSQL schema name of 1 to 63 lower-case letters, digits and '_', not "
        "starting with a digit or \"pg_\" (one per host, e.g. \"gpu_host_07\")");
  }
  if (out.postgresql.find("options=") != std::string::npos) {
    return object["schema"].error(
        "cannot be given with a URL that sets libpq's options: put search_path there or use "
        "schema, not both");
  }
  return {};
}

// A schema name that needs no quoting anywhere: [a-z_][a-z0-9_]{0,62}, not pg_* (reserved).
bool schema_name_ok(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.starts_with("pg_")) return false;
  if (name.front() >= '0' && name.front() <= '9') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
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
  if (notifiers::find_integration(type) == nullptr) {
    std::string known;
    for (const auto* integration : notifiers::integrations()) {
      known += (known.empty() ? "" : ", ") + std::string(integration->name());
    }
    return type_field.error(shown(type) + " is not one of " + known);
  }
  destination.type = type;
  destination.name =
      KW_TRY(object["name"].string_or(destination.type + "-" + std::to_string(index)));
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
  if (!notifiers::integration_of(destination).traits().clusters) {
    return field.error("only " + notifiers::types_with(&notifiers::IntegrationTraits::clusters) +
                       " notifiers take several URLs (the peers of a cluster); "
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

// The URL and, for the types that take one, the secret (a webhook's signing key, ntfy's token); the
// CA bundle to verify against. An Alertmanager cluster's peer URLs go to `peers` instead (the
// caller makes one Notifier each).
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

  if (!notifiers::integration_of(destination).traits().takes_secret) {
    for (const std::string_view key : {"secret_file", "secret_env"}) {
      if (object[key].present()) {
        return object[key].error(
            "only " + notifiers::types_with(&notifiers::IntegrationTraits::takes_secret) +
            " notifiers take a secret");
      }
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
    if (!notifiers::integration_of(destination).traits().resends) {
      return object["resend_interval"].error(
          "only " + notifiers::types_with(&notifiers::IntegrationTraits::resends) +
          " notifiers re-send active alerts (the others get reminders, "
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
                            const Environment& environment, const std::filesystem::path& base_dir,
                            const runners::SourceCatalogue& sources) {
  Reader reader(source_name, environment, base_dir, sources);
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
  out["storage"] = config.storage.postgresql.empty()
                       ? json{{"path", config.storage.path.string()}}
                       : json{{"postgresql", config.storage.postgresql}};
  if (!config.storage.schema.empty()) out["storage"]["schema"] = config.storage.schema;
  if (config.storage.warm_start) out["storage"]["warm_start"] = true;
  if (config.storage.fleet_controls) out["storage"]["fleet_controls"] = true;
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
    json entry = benchmark.source->to_json(format_duration);
    if (benchmark.interval) entry["interval"] = format_duration(*benchmark.interval);
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
    json entry = {{"type", d.type},
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
    if (notifiers::integration_of(d).traits().resends) {
      entry["resend_interval"] = format_duration(d.resend_interval);
    }
    notifier_list.push_back(entry);
  }
  out["notifiers"] = notifier_list;
  return out;
}

}  // namespace kernelwatch::config
