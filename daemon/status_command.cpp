#include "daemon/status_command.hpp"

#include <chrono>
#include <ostream>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "core/url.hpp"
#include "daemon/format.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::size_t kMaxAnswer = 64 * 1024 * 1024;  // the status of a very large history

// GET over plain HTTP/1.1 with Beast's parser (chunked, lengths and limits as the server reads
// them), with a timeout before each step. Any malformed answer is an error, never a crash.
core::Result<std::string> http_get(const core::Url& url, std::string_view target,
                                   std::chrono::seconds timeout) {
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswer);
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, url.host);
  request.set(http::field::connection, "close");
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

std::string field(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

}  // namespace

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
  auto body = http_get(*url, "/api/v1/status", std::chrono::seconds(options.timeout_seconds));
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
  const json& cycle = status.value("cycle", json::object());
  out << "kernelwatch " << field(status, "version") << "  backend " << field(status, "backend");
  if (const auto note = field(status, "backendNote"); note != "-" && !note.empty())
    out << " (" << note << ")";
  out << "\nstarted " << field(status, "startedAt") << "  database " << field(status, "database")
      << '\n';
  out << "cycles " << field(cycle, "count")
      << (cycle.value("running", false) ? " (one running)" : "") << "  last "
      << field(cycle, "lastEnd") << "  next " << field(cycle, "next") << '\n';
  for (const auto& d : status.value("outbox", json::array())) {
    out << "outbox " << field(d, "destination") << ": pending " << field(d, "pending")
        << ", delivered " << field(d, "delivered") << ", dead " << field(d, "dead") << '\n';
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& k : status.value("keys", json::array())) {
    const auto median = k.value("lastMedianNs", std::int64_t{0});
    std::string band = "-";
    if (k.contains("band") && k["band"].is_object()) {
      band = format_duration(std::chrono::nanoseconds{k["band"].value("lower", std::int64_t{0})}) +
             " .. " +
             format_duration(std::chrono::nanoseconds{k["band"].value("upper", std::int64_t{0})});
    }
    std::string alert = "-";
    if (k.contains("openAlert") && k["openAlert"].is_object()) {
      alert = field(k["openAlert"], "id") + " " + field(k["openAlert"], "kind") + " " +
              field(k["openAlert"], "state");
    }
    rows.push_back({field(k, "benchmark"), field(k, "provider"), field(k, "workload"),
                    field(k, "environment"),
                    median > 0 ? format_duration(std::chrono::nanoseconds{median}) : "-", band,
                    field(k, "verdict"), alert});
  }
  out << '\n';
  print_table(out,
              {"BENCHMARK", "PROVIDER", "WORKLOAD", "ENVIRONMENT", "LAST MEDIAN", "BAND", "VERDICT",
               "ALERT"},
              rows);
  return 0;
}

}  // namespace kernelwatch::daemon
