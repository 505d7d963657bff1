#include "daemon/status_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>
#include <tuple>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "core/alert.hpp"
#include "core/digest.hpp"
#include "core/url.hpp"
#include "daemon/format.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::size_t kMaxAnswer = 64 * 1024 * 1024;  // the status of a very large history

}  // namespace

core::Result<std::string> http_exchange(const core::Url& url, std::string_view target,
                                        std::chrono::seconds timeout, const std::string* body,
                                        const std::string& bearer) {
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswer);
  http::request<http::string_body> request{body != nullptr ? http::verb::post : http::verb::get,
                                           target, 11};
  request.set(http::field::host, url.host);
  request.set(http::field::connection, "close");
  if (!bearer.empty()) request.set(http::field::authorization, "Bearer " + bearer);
  if (body != nullptr) {
    request.set(http::field::content_type, "application/json");
    request.body() = *body;
    request.prepare_payload();
  }
  std::string failed;  // "<step>: <reason>"
  const auto fail = [&](std::string_view step, const beast::error_code& ec) {
    failed = std::string(step) + ": " + ec.message();
  };
  resolver.async_resolve(
      url.host, std::to_string(url.port),
      [&](const beast::error_code& ec, const asio::ip::tcp::resolver::results_type& found) {
        if (ec) return fail("resolving " + url.host, ec);
        stream.expires_after(timeout);
        stream.async_connect(found, [&](const beast::error_code& ec, const auto&) {
          if (ec) return fail("connecting", ec);
          stream.expires_after(timeout);
          http::async_write(stream, request, [&](const beast::error_code& ec, std::size_t) {
            if (ec) return fail("sending the request", ec);
            stream.expires_after(timeout);
            http::async_read(stream, buffer, parser, [&](const beast::error_code& ec, std::size_t) {
              if (ec) fail("reading the answer", ec);
            });
          });
        });
      });
  io.run();
  const std::string where = url.host + ":" + std::to_string(url.port);
  if (!failed.empty()) {
    return core::fail(core::ErrorCode::Unavailable,
                      where + ": " + failed +
                          (failed.rfind("connecting", 0) == 0 ? " (is the daemon running?)" : ""));
  }
  const auto& response = parser.get();
  if (response.result() != http::status::ok) {
    constexpr std::size_t kShown = 300;
    const std::string& body = response.body();
    return core::fail(core::ErrorCode::Unavailable,
                      where + ": HTTP " + std::to_string(response.result_int()) + ": " +
                          body.substr(0, kShown) + (body.size() > kShown ? "..." : ""));
  }
  return response.body();
}

namespace {

std::string field(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::int64_t integer(const json& j, const char* name) {
  const auto it = j.find(name);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

// A key as the API shows it (its `state` and `change`, detectors::standing_of): the one
// vocabulary every view uses, worst first (core::KeyState). A state this build does not know
// (a newer daemon) is shown as it came and counted as insufficient_data.
struct KeyLine {
  core::KeyState state = core::KeyState::InsufficientData;
  std::string state_name;
  bool from_history = false;  // its alert was found in imported history: never paged
  std::string environment;
  std::vector<std::string> cells;  // STATE CHANGE LAST ALERT BENCHMARK PROVIDER WORKLOAD
};

KeyLine line_of(const json& key) {
  KeyLine line;
  line.state_name = field(key, "state");
  if (const auto state = core::parse_key_state(line.state_name)) line.state = *state;
  line.environment = field(key, "environment");
  const auto median = integer(key, "lastMedianNs");
  std::string change = "-";
  if (const auto it = key.find("change"); it != key.end() && it->is_number()) {
    change = core::format_change(it->get<double>());
  }
  std::string alert = "-";
  if (const auto open = key.find("openAlert"); open != key.end() && open->is_object()) {
    line.from_history = field(*open, "origin") == "history";
    // A member of an incident names its incident: that is what to acknowledge.
    const bool member = open->contains("incident") && (*open)["incident"].is_string();
    alert = member ? field(*open, "incident") + " incident"
                   : field(*open, "id") + " " + field(*open, "kind");
  }
  line.cells = {line.state_name + (line.from_history ? "*" : ""),
                change,
                median > 0 ? format_duration(std::chrono::nanoseconds{median}) : "-",
                alert,
                field(key, "benchmark"),
                field(key, "provider"),
                field(key, "workload")};
  return line;
}

void print_daemon(std::ostream& out, const json& status) {
  const json& cycle = status.value("cycle", json::object());
  out << "kernelwatch " << field(status, "version") << "  backend " << field(status, "backend");
  if (const auto note = field(status, "backendNote"); note != "-" && !note.empty())
    out << " (" << note << ")";
  out << "\nstarted " << field(status, "startedAt") << "  database " << field(status, "database")
      << '\n';
  out << "cycles " << field(cycle, "count") << " (" << integer(cycle, "errors") << " error(s))"
      << (cycle.value("running", false) ? ", one running" : "") << "  last "
      << field(cycle, "lastEnd") << "  next " << field(cycle, "next") << '\n';
  for (const auto& d : status.value("outbox", json::array())) {
    out << "outbox " << field(d, "destination") << ": pending " << field(d, "pending")
        << ", delivered " << field(d, "delivered") << ", dead " << field(d, "dead") << '\n';
  }
  const json unreadable = status.value("unreadableRuns", json::object());
  if (integer(unreadable, "count") > 0) {
    out << "unreadable stored runs: " << integer(unreadable, "count")
        << ", left out of detection and answers (the log names each)";
    const json reasons = unreadable.value("reasons", json::array());
    if (!reasons.empty() && reasons[0].is_string()) {
      out << "\n  first: " << reasons[0].get<std::string>();
    }
    out << '\n';
  }
}

// "1h", "90s": an entry's interval.
std::string interval_text(double seconds) {
  const auto whole = static_cast<long long>(seconds);
  if (whole > 0 && whole % 3600 == 0) return std::to_string(whole / 3600) + "h";
  if (whole > 0 && whole % 60 == 0) return std::to_string(whole / 60) + "m";
  return std::to_string(whole) + "s";
}

// "2026-12-01T18:56:27Z": a timestamp to the second, "-" for none.
std::string to_second(std::string stamp) {
  if (const auto dot = stamp.find('.'); dot != std::string::npos)
    stamp = stamp.substr(0, dot) + "Z";
  return stamp;
}

// One line per config entry: its interval, last execution (runs stored, failed) and next run;
// then each entry's newest error on a line of its own, never cut.
void print_entries(std::ostream& out, const json& status, std::size_t width) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> errors;
  for (const auto& e : status.value("entries", json::array())) {
    if (!e.is_object()) continue;
    const json interval = e.value("intervalSeconds", json(0));
    std::string last = to_second(field(e, "lastEnd"));
    if (last != "-") {
      last += " (" + std::to_string(integer(e, "lastRuns")) + " run(s), " +
              std::to_string(integer(e, "lastFailedRuns")) + " failed)";
    }
    rows.push_back({field(e, "name"), field(e, "runner"),
                    interval_text(interval.is_number() ? interval.get<double>() : 0), last,
                    to_second(field(e, "next"))});
    if (const auto error = field(e, "lastError"); error != "-") {
      errors.push_back("  " + field(e, "name") + " at " + to_second(field(e, "lastErrorAt")) +
                       ": " + error);
    }
  }
  if (rows.empty()) return;
  out << '\n';
  print_table(out, {"ENTRY", "RUNNER", "EVERY", "LAST RUN", "NEXT RUN"}, rows,
              TableLayout{0, width, {0, 3}});
  if (errors.empty()) return;
  out << "last error of each entry:\n";
  for (const auto& line : errors) out << line << '\n';
}

// "218 key(s)", the count of each problem state, of each other, and of the open alerts found in
// imported history.
std::string summary_of(const std::vector<KeyLine>& lines) {
  std::map<core::KeyState, std::size_t> counts;
  std::size_t from_history = 0;
  for (const auto& line : lines) {
    ++counts[line.state];
    from_history += line.from_history ? 1 : 0;
  }
  std::string problems;
  std::string others;
  for (const auto state : core::kKeyStates) {
    std::string& text = core::is_problem(state) ? problems : others;
    text += (text.empty() ? "" : ", ") + std::to_string(counts[state]) + " " +
            std::string(core::to_string(state));
  }
  std::string text = std::to_string(lines.size()) + " key(s)\n  with a problem: " + problems +
                     "\n  without: " + others + "\n";
  if (from_history > 0) {
    text += "  " + std::to_string(from_history) +
            " of the open alerts (*) were found in imported history\n";
  }
  return text;
}

void print_keys(std::ostream& out, std::vector<KeyLine> lines, std::size_t width) {
  // Environments with the worst key first, then by name; inside one, worst first, then labels.
  std::map<std::string, core::KeyState> worst;
  for (const auto& line : lines) {
    auto [it, fresh] = worst.emplace(line.environment, line.state);
    if (!fresh) it->second = std::min(it->second, line.state);
  }
  const auto order = [&](const KeyLine& l) {
    return std::tie(worst[l.environment], l.environment, l.state, l.cells[4], l.cells[5],
                    l.cells[6]);
  };
  std::sort(lines.begin(), lines.end(),
            [&](const KeyLine& a, const KeyLine& b) { return order(a) < order(b); });
  const std::vector<std::string> header = {"STATE",     "CHANGE",   "LAST MEDIAN", "ALERT",
                                           "BENCHMARK", "PROVIDER", "WORKLOAD"};
  const TableLayout layout{2, width, {6, 5, 4}};
  for (std::size_t begin = 0; begin < lines.size();) {
    std::size_t end = begin;
    std::vector<std::vector<std::string>> rows;
    while (end < lines.size() && lines[end].environment == lines[begin].environment) {
      rows.push_back(lines[end++].cells);
    }
    out << '\n' << lines[begin].environment << '\n';
    print_table(out, header, rows, layout);
    begin = end;
  }
}

void print_protocol_changes(std::ostream& out, const json& status) {
  for (const auto& change : status.value("protocolChanges", json::array())) {
    std::string previous;
    for (const auto& key : change.value("previousKeys", json::array())) {
      previous += (previous.empty() ? "" : ", ") + core::short_digest(field(key, "digest")) +
                  " (last run " + field(key, "lastObservedAt") + ")";
    }
    out << "protocol changed: " << field(change, "benchmark") << ' ' << field(change, "provider")
        << ' ' << field(change, "workload") << ' ' << field(change, "environment")
        << ": detection started over in key " << core::short_digest(field(change, "digest"))
        << "; not compared with " << previous << '\n';
  }
}

}  // namespace

std::string format_status(const json& status, bool all, std::size_t width) {
  std::ostringstream out;
  print_daemon(out, status);
  print_entries(out, status, width);
  std::vector<KeyLine> lines;
  for (const auto& key : status.value("keys", json::array())) {
    if (key.is_object()) lines.push_back(line_of(key));
  }
  out << '\n' << summary_of(lines);
  print_protocol_changes(out, status);
  for (const auto& unit : status.value("outOfLine", json::array())) {
    if (!unit.is_object()) continue;
    out << "out of line (" << field(unit, "state") << ", alert " << field(unit, "id")
        << "): " << field(unit, "explanation") << '\n';
  }
  std::vector<KeyLine> shown;
  std::size_t hidden = 0;
  bool from_history = false;
  for (auto& line : lines) {
    if (!all && !core::is_problem(line.state)) {
      ++hidden;
      continue;
    }
    from_history = from_history || line.from_history;
    shown.push_back(std::move(line));
  }
  print_keys(out, std::move(shown), width);
  if (from_history) {
    out << "\n* an alert found in imported history: listed, never paged (acknowledge or "
           "rebaseline it)\n";
  }
  if (hidden > 0) {
    out << '\n'
        << hidden << " key(s) in_band or insufficient_data not listed: kernelwatch status --all\n";
  }
  return out.str();
}

std::string format_fleet(const json& fleet) {
  std::ostringstream out;
  if (!fleet.value("postgresql", false)) {
    out << "this daemon's database is a SQLite file: it holds this host only (a fleet shares a "
           "PostgreSQL database, one schema per host: docs/FLEET.md)\n";
    return out.str();
  }
  const json hosts = fleet.value("hosts", json::array());
  out << "fleet: " << field(fleet, "database") << ", " << hosts.size()
      << " host(s), problems first\n\n";
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // each host's open alerts, or why it cannot be read
  for (const auto& host : hosts) {
    if (!host.is_object()) continue;
    const std::string name = field(host, "schema");
    if (host.contains("error") && host["error"].is_string()) {
      rows.push_back({name, "-", "cannot be read", "-", "-"});
      notes.push_back(name + ": " + host["error"].get<std::string>());
      continue;
    }
    rows.push_back(
        {name + (host.value("self", false) ? " (this)" : ""), std::to_string(integer(host, "keys")),
         host.value("newestRun", json()).is_string() ? to_second(field(host, "newestRun"))
                                                     : std::string("no run yet"),
         std::to_string(integer(host, "firing")), std::to_string(integer(host, "acknowledged"))});
    for (const auto& alert : host.value("openAlerts", json::array())) {
      if (!alert.is_object()) continue;
      notes.push_back(name + ": " + field(alert, "state") + " " + field(alert, "id") + " " +
                      field(alert, "kind") + " " + field(alert, "direction") + " " +
                      field(alert, "benchmark") + " " + field(alert, "provider") + " " +
                      field(alert, "workload"));
    }
  }
  print_table(out, {"HOST (SCHEMA)", "KEYS", "NEWEST RUN", "FIRING", "ACKNOWLEDGED"}, rows);
  if (!notes.empty()) out << "\nopen alerts (the newest of each host):\n";
  for (const auto& note : notes) out << "  " << note << '\n';
  return out.str();
}

int run_status(const StatusOptions& options, std::ostream& out, std::ostream& err) {
  auto url = core::parse_url(options.url);
  if (url && url->scheme != "http") {
    url = core::fail(core::ErrorCode::InvalidArgument,
                     "must start with http:// (the status endpoint is plain HTTP on loopback)");
  }
  if (!url) {
    err << "kernelwatch status: --url: " << url.error().message << '\n';
    return 2;
  }
  const char* target = options.fleet ? "/api/v1/fleet" : "/api/v1/status";
  auto body = http_exchange(*url, target, std::chrono::seconds(options.timeout_seconds));
  if (!body) {
    err << "kernelwatch status: " << body.error().message << '\n';
    return 1;
  }
  const json status = json::parse(*body, nullptr, false);
  if (status.is_discarded() || !status.is_object()) {
    err << "kernelwatch status: the answer is not a JSON object\n";
    return 1;
  }
  if (options.format == OutputFormat::Json) {
    out << status.dump(2) << '\n';
    return 0;
  }
  out << (options.fleet ? format_fleet(status) : format_status(status, options.all));
  return 0;
}

}  // namespace kernelwatch::daemon
