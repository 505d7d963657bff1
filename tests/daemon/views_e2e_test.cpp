// Every view tells the same story of each key (issue #25): on the repository's Liger history
// (imported, then served by the real daemon), /api/v1/status, `kernelwatch status --all`, the
// dashboard's overview, the static report of `kernelwatch report` and `kernelwatch backtest` show
// each key with the same state, change and band (the example: layer_norm/backward liger
// hidden16384-rows4096-fp32 on the H100 showed `firing* -14.4%` in status and `+0.2%` on the
// overview).
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::http;

// What a view shows of a key: its state, its change and its band, as text.
struct Shown {
  std::string state;
  std::string change;  // "+0.2%", "" when none
  std::string band;    // "[513.3 us, 539.1 us]", "" when none

  friend bool operator==(const Shown&, const Shown&) = default;
};

std::ostream& operator<<(std::ostream& out, const Shown& s) {
  return out << s.state << " " << (s.change.empty() ? "-" : s.change) << " "
             << (s.band.empty() ? "-" : s.band);
}

std::string ref_of(const json& key) {
  return key["digest"].get<std::string>().substr(std::string("sha256:").size());
}

// The API's keys by reference, as text.
std::map<std::string, Shown> from_api(const json& status) {
  std::map<std::string, Shown> out;
  for (const auto& key : status["keys"]) {
    Shown s;
    s.state = key["state"];
    if (key["change"].is_number()) s.change = core::format_change(key["change"].get<double>());
    if (key["band"].is_object()) {
      s.band = "[" + core::format_latency(std::chrono::nanoseconds(key["band"]["lower"])) + ", " +
               core::format_latency(std::chrono::nanoseconds(key["band"]["upper"])) + "]";
    }
    out[ref_of(key)] = s;
  }
  return out;
}

// The text between `open` and the next `close` after `from` in `text` ("" when absent).
std::string between(const std::string& text, std::size_t from, const std::string& open,
                    const std::string& close) {
  const auto begin = text.find(open, from);
  if (begin == std::string::npos) return "";
  const auto end = text.find(close, begin + open.size());
  return end == std::string::npos ? ""
                                  : text.substr(begin + open.size(), end - begin - open.size());
}

// The rows of an overview page (served or static): data-key, data-state, the change and band.
void from_overview(const std::string& html, std::map<std::string, Shown>& out) {
  const std::string marker = "<tr class=\"key\" data-key=\"";
  for (auto at = html.find(marker); at != std::string::npos; at = html.find(marker, at + 1)) {
    const std::string row = html.substr(at, html.find("</tr>", at) - at);
    const std::string ref = between(row, 0, "data-key=\"", "\"");
    Shown s;
    s.state = between(row, 0, "data-state=\"", "\"");
    s.change = between(row, 0, "<span class=\"change\">", "</span>");
    s.band = between(row, 0, "<span class=\"band\">", "</span>");
    const auto [known, fresh] = out.emplace(ref, s);
    EXPECT_EQ(known->second, s) << "one page shows key " << ref << " two ways";
  }
}

TEST(ViewsE2E, EveryViewShowsEachKeyOfTheLigerHistoryTheSameWay) {
  testing::TempDir dir;
  const auto db = dir / "kw.db";
  const auto imported = testing::run_kernelwatch(
      {"import", "--db", db.string(), testing::liger_csv("weekly_ci.tvd_layer_norm.csv").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const json config = {{"storage", {{"path", db.string()}}},
                       {"http", {{"listen", "127.0.0.1:0"}}},
                       {"backend", "cpu"},
                       {"benchmarks", json::array()}};
  testing::write_file(dir / "kernelwatch.json", config.dump(2));
  testing::DaemonChild daemon;
  daemon.start(dir / "kernelwatch.json", dir / "daemon.log");
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon.port());

  // The API.
  const auto answer = http(daemon.port(), "GET", "/api/v1/status");
  ASSERT_EQ(answer.status, 200);
  const json status = json::parse(answer.body);
  const auto api = from_api(status);
  ASSERT_EQ(api.size(), 198u);
  std::map<std::string, int> states;
  for (const auto& [ref, shown] : api) ++states[shown.state];
  EXPECT_GT(states["firing"] + states["incident"] + states["acknowledged"], 0);

  // `kernelwatch status --json` is the API's answer as it is; `--all` prints each key's state
  // and change in its first two columns.
  const auto as_json = testing::run_kernelwatch({"status", "--url", url, "--json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  EXPECT_EQ(from_api(json::parse(as_json.out)), api);
  const auto text = testing::run_kernelwatch({"status", "--url", url, "--all"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const auto& key : status["keys"]) {
    const Shown& shown = api.at(ref_of(key));
    const std::regex line(
        "\n  " + shown.state + "\\*? +" +
        std::regex_replace(shown.change.empty() ? "-" : shown.change, std::regex("[+.]"), "\\$&") +
        " +[^\n]* " + key["benchmark"].get<std::string>() + " +" +
        key["provider"].get<std::string>() + " ");
    EXPECT_TRUE(std::regex_search(text.out, line))
        << key["benchmark"] << " " << key["provider"] << " " << key["workload"] << ": " << shown;
  }

  // The served overview, every page.
  std::map<std::string, Shown> overview;
  for (int page = 1; page <= 3; ++page) {
    const auto served = http(daemon.port(), "GET", "/?page=" + std::to_string(page));
    ASSERT_EQ(served.status, 200);
    from_overview(served.body, overview);
  }
  EXPECT_EQ(overview, api);

  // The static report, from the database alone.
  daemon.stop();
  const auto report =
      testing::run_kernelwatch({"report", "--db", db.string(), "--out", (dir / "site").string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  std::map<std::string, Shown> reported;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "site")) {
    if (entry.path().filename().string().rfind("index", 0) == 0) {
      from_overview(testing::read_file(entry.path()), reported);
    }
  }
  EXPECT_EQ(reported, api);

  // The backtest: each key with an open alert has it open there, with the same change and band
  // (incident members inside their incident), and no other key has one open.
  const auto backtest = testing::run_kernelwatch({"backtest", "--db", db.string(), "--json"});
  ASSERT_EQ(backtest.exit_code, 0) << backtest.err;
  std::map<std::string, Shown> open;
  const auto note = [&](const json& alert, bool member) {
    if (alert["state"] != "firing" && alert["state"] != "acknowledged") return;
    Shown s;
    s.state = alert["state"] == "acknowledged" ? "acknowledged" : member ? "incident" : "firing";
    s.change = core::format_change(alert["relativeChange"].get<double>());
    s.band = "[" + core::format_latency(std::chrono::nanoseconds(alert["band"]["lower"])) + ", " +
             core::format_latency(std::chrono::nanoseconds(alert["band"]["upper"])) + "]";
    open[alert["benchmark"].get<std::string>() + " " + alert["provider"].get<std::string>() + " " +
         alert["workload"].get<std::string>() + " " + alert["environment"].get<std::string>()] = s;
  };
  for (const auto& alert : json::parse(backtest.out)) {
    if (alert["members"].empty()) {
      if (alert["kind"] != "failed") note(alert, false);
    } else {
      for (const auto& member : alert["members"]) note(member, true);
    }
  }
  std::size_t with_alert = 0;
  for (const auto& key : status["keys"]) {
    const Shown& shown = api.at(ref_of(key));
    const std::string name =
        key["benchmark"].get<std::string>() + " " + key["provider"].get<std::string>() + " " +
        key["workload"].get<std::string>() + " " + key["environment"].get<std::string>();
    const bool alerting =
        shown.state == "firing" || shown.state == "incident" || shown.state == "acknowledged";
    if (!alerting) {
      EXPECT_EQ(open.count(name), 0u) << name << ": " << shown;
      continue;
    }
    ++with_alert;
    ASSERT_EQ(open.count(name), 1u) << name << ": " << shown;
    EXPECT_EQ(open.at(name), shown) << name;
  }
  EXPECT_EQ(with_alert, open.size());
}

}  // namespace
}  // namespace kernelwatch
