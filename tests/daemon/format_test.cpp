#include "daemon/format.hpp"

#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "daemon/status_command.hpp"

namespace kernelwatch::daemon {
namespace {

using std::chrono::nanoseconds;

TEST(FormatTest, DurationsPickAReadableUnit) {
  EXPECT_EQ(format_duration(nanoseconds{812}), "812 ns");
  EXPECT_EQ(format_duration(nanoseconds{577632}), "577.6 us");
  EXPECT_EQ(format_duration(nanoseconds{23379841}), "23.38 ms");
  EXPECT_EQ(format_duration(nanoseconds{2'500'000'000}), "2.500 s");
}

TEST(FormatTest, TableColumnsAlign) {
  std::ostringstream out;
  print_table(out, {"A", "LONGER"}, {{"xyz", "1"}, {"w", "22"}});
  EXPECT_EQ(out.str(), "A    LONGER\nxyz  1\nw    22\n");
}

TEST(FormatTest, ATooWideTableCutsTheColumnsItMayCutInOrder) {
  std::ostringstream out;
  print_table(out, {"A", "WORKLOAD"}, {{"x", "hidden16384-rows4096-fp32"}}, {2, 16, {1}});
  EXPECT_EQ(out.str(), "  A  WORKLOAD\n  x  hidden1638~\n");
}

using nlohmann::json;

// A key as /api/v1/status shows it: its state and change are the daemon's (one standing for
// every view); the status command prints them as they come.
json key(const std::string& workload, const std::string& state, json change,
         json open_alert = nullptr, const std::string& environment = "nvidia-h100-80gb-hbm3") {
  return {{"benchmark", "tvd/forward"},
          {"provider", "liger"},
          {"workload", workload},
          {"environment", environment},
          {"lastStatus", "passed"},
          {"lastMedianNs", 1'100'000},
          {"state", state},
          {"change", std::move(change)},
          {"band", {{"lower", 950'000}, {"upper", 1'050'000}, {"center", 1'000'000}}},
          {"openAlert", std::move(open_alert)}};
}

json alert(const std::string& state, const std::string& origin, double change,
           json incident = nullptr) {
  return {{"id", "a"},           {"kind", "step"},   {"direction", "regression"},
          {"state", state},      {"origin", origin}, {"relativeChange", change},
          {"incident", incident}};
}

// Where this text is (npos when absent).
std::size_t at(const std::string& text, const std::string& part) {
  return text.find(part);
}

// Where the first line that starts with `state` (after the indent) and holds `change` is.
std::size_t row(const std::string& text, const std::string& state, const std::string& change) {
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    const std::string line = text.substr(begin, end - begin);
    if (line.rfind("  " + state + " ", 0) == 0 &&
        line.find(" " + change + " ") != std::string::npos) {
      return begin;
    }
    begin = end + 1;
  }
  return std::string::npos;
}

TEST(StatusFormat, ProblemsComeFirstWorstFirstAndTheRestOnlyWithAll) {
  const std::string long_workload = "tokens16384-vocab131072-" + std::string(80, 'x');
  json status = {
      {"version", "0.1.0"},
      {"backend", "cpu"},
      {"cycle", {{"count", 3}, {"errors", 1}}},
      {"outbox", json::array()},
      {"keys",
       json::array(
           {key("w-in-band", "in_band", 0.01),
            key("w-acked", "acknowledged", 0.2, alert("acknowledged", "daemon", 0.2)),
            key("w-pending", "breached", 0.1),
            key("w-history", "firing", -0.8, alert("firing", "history", -0.8)),
            key("w-member", "incident", 0.08, alert("firing", "daemon", 0.08, "0123456789ab")),
            key(long_workload, "insufficient_data", nullptr),
            key("w-firing", "firing", 0.31, alert("firing", "daemon", 0.31), "cpu-x86-64")})}};
  const std::string text = format_status(status, false);
  // The summary counts every state, problems and the rest apart, in the one vocabulary.
  EXPECT_NE(at(text,
               "7 key(s)\n  with a problem: 2 firing, 0 failing, 1 incident, 1 breached, "
               "1 acknowledged, 0 inconclusive\n  without: 1 in_band, 1 insufficient_data\n"
               "  1 of the open alerts (*) were found in imported history"),
            std::string::npos)
      << text;
  // Problems only, the environment with a firing key first; inside one, worst first.
  EXPECT_LT(row(text, "firing", "+31.0%"), row(text, "firing*", "-80.0%")) << text;
  EXPECT_LT(row(text, "firing*", "-80.0%"), row(text, "incident", "+8.0%")) << text;
  EXPECT_LT(row(text, "incident", "+8.0%"), row(text, "breached", "+10.0%")) << text;
  EXPECT_LT(row(text, "breached", "+10.0%"), row(text, "acknowledged", "+20.0%")) << text;
  // A member names its incident: what to acknowledge.
  EXPECT_NE(at(text, "0123456789ab incident"), std::string::npos) << text;
  EXPECT_EQ(at(text, "w-in-band"), std::string::npos) << text;
  EXPECT_EQ(at(text, long_workload.substr(0, 20)), std::string::npos) << text;
  EXPECT_NE(at(text, "2 key(s) in_band or insufficient_data not listed"), std::string::npos);

  const std::string all = format_status(status, true);
  EXPECT_NE(at(all, "w-in-band"), std::string::npos) << all;
  EXPECT_LT(at(all, "acknowledged"), at(all, "w-in-band")) << all;
  // Every line fits 120 columns: the long workload is cut, never the state or the change.
  std::istringstream lines(all);
  std::string line;
  while (std::getline(lines, line)) EXPECT_LE(line.size(), 120u) << line;
  EXPECT_NE(at(all, long_workload.substr(0, 20)), std::string::npos) << all;
  EXPECT_NE(at(all, "~\n"), std::string::npos) << all;
}

TEST(StatusFormat, AProtocolChangeIsNamedWithTheKeysItSeparates) {
  const std::string digest_new = "sha256:" + std::string(64, 'a');
  const std::string digest_old = "sha256:" + std::string(64, 'b');
  json status = {{"keys", json::array()},
                 {"protocolChanges",
                  json::array({{{"benchmark", "layer_norm/backward"},
                                {"provider", "kernelwatch-fused"},
                                {"workload", "hidden2048-rows2048-fp32"},
                                {"environment", "cpu-x86-64"},
                                {"digest", digest_new},
                                {"previousKeys",
                                 json::array({{{"digest", digest_old},
                                               {"lastObservedAt", "2026-01-02T03:04:05Z"}}})}}})}};
  const std::string text = format_status(status, false);
  EXPECT_NE(at(text,
               "protocol changed: layer_norm/backward kernelwatch-fused "
               "hidden2048-rows2048-fp32 cpu-x86-64: detection started over in key "
               "sha256:aaaaaaaaaaaa; not compared with sha256:bbbbbbbbbbbb (last run "
               "2026-01-02T03:04:05Z)"),
            std::string::npos)
      << text;
}

TEST(StatusFormat, AGpuOutOfLineIsNamedWithItsStateAndAlert) {
  json status = {
      {"keys", json::array()},
      {"outOfLine", json::array({{{"id", "0123456789ab"},
                                  {"state", "acknowledged"},
                                  {"explanation",
                                   "GPU 3 (UUID GPU-3) of host h100-a is 12.0% slower than its "
                                   "7 siblings on 9 of 9 benchmarks in the cycle of ..."}}})}};
  const std::string text = format_status(status, false);
  EXPECT_NE(at(text,
               "out of line (acknowledged, alert 0123456789ab): GPU 3 (UUID GPU-3) of host "
               "h100-a is 12.0% slower"),
            std::string::npos)
      << text;
  EXPECT_EQ(at(format_status({{"keys", json::array()}}, false), "out of line"), std::string::npos);
}

TEST(StatusFormat, TheFleetIsOneLinePerHostInTheAnswersOrderWithItsAlertsAfter) {
  const json fleet = {
      {"database", "postgresql://db:5432/kw, schema gpu_b"},
      {"postgresql", true},
      {"hosts",
       json::array({{{"schema", "broken"}, {"error", "relation \"broken.keys\" does not exist"}},
                    {{"schema", "gpu_a"},
                     {"self", false},
                     {"keys", 12},
                     {"newestRun", "2021-03-04T05:06:07.123456789Z"},
                     {"firing", 1},
                     {"acknowledged", 0},
                     {"openAlerts", json::array({{{"id", "a1b2c3d4e5f6"},
                                                  {"state", "firing"},
                                                  {"kind", "step"},
                                                  {"direction", "regression"},
                                                  {"benchmark", "tvd/forward"},
                                                  {"provider", "liger"},
                                                  {"workload", "tokens1-vocab2-fp32"}}})},
                     {"error", nullptr}},
                    {{"schema", "gpu_b"},
                     {"self", true},
                     {"keys", 3},
                     {"newestRun", nullptr},
                     {"firing", 0},
                     {"acknowledged", 0},
                     {"openAlerts", json::array()},
                     {"error", nullptr}}})}};
  const std::string text = format_fleet(fleet);
  EXPECT_NE(text.find("3 host(s)"), std::string::npos) << text;
  EXPECT_LT(text.find("\nbroken "), text.find("\ngpu_a ")) << text;
  EXPECT_LT(text.find("\ngpu_a "), text.find("\ngpu_b (this) ")) << text;
  EXPECT_NE(text.find("no run yet"), std::string::npos) << text;
  EXPECT_NE(text.find("2021-03-04T05:06:07Z"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu_a: firing a1b2c3d4e5f6 step regression tvd/forward liger"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("broken: relation"), std::string::npos) << text;
  EXPECT_NE(format_fleet({{"postgresql", false}, {"hosts", json::array()}}).find("SQLite file"),
            std::string::npos);
}

}  // namespace
}  // namespace kernelwatch::daemon
