// Hostile input against the real daemon as a process (issue #15): each request below once
// crashed it, wrapped a value silently or poisoned its state. Every run is dated relative to the
// test's clock; the daemon runs no benchmarks (it only watches posted runs) and has no notifier.
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/time.hpp"
#include "tests/daemon/support/daemon_child.hpp"
#include "tests/daemon/support/posted_record.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using Reply = testing::HttpReply;
using testing::eventually;
using testing::http;

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kToken = "hostile-token-7c2e";

// Run i of a series is observed i minutes after day_before_now().
using testing::day_before_now;

json record_at(core::Timestamp observed, json median_ns, const std::string& workload = "hostile") {
  return testing::posted_record(
      {observed, std::move(median_ns), workload, "posted", "hostile-test", /*spread=*/false});
}

json record(int minute, json median_ns, const std::string& workload = "hostile") {
  return record_at(day_before_now() + std::chrono::minutes(minute), std::move(median_ns), workload);
}

class Daemon {
 public:
  explicit Daemon(const testing::TempDir& dir) : dir_(dir) {
    testing::write_file(dir / "token", std::string(kToken) + "\n");
    std::filesystem::permissions(
        dir / "token", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    testing::write_file(dir / "kernelwatch.json", config().dump(2));
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  [[nodiscard]] json config() const {
    return json{{"storage", {{"path", (dir_ / "kw.db").string()}}},
                {"http", {{"listen", "127.0.0.1:0"}, {"token_file", (dir_ / "token").string()}}},
                {"backend", "cpu"},
                {"benchmarks", json::array()},
                {"notifiers", json::array()}};
  }
  void start() {
    child_.start(dir_ / "kernelwatch.json",
                 dir_ / ("daemon-" + std::to_string(starts_++) + ".log"));
  }
  [[nodiscard]] bool alive() const { return child_.alive(); }
  [[nodiscard]] std::uint16_t port() const { return child_.port(); }
  [[nodiscard]] pid_t pid() const { return child_.pid(); }
  [[nodiscard]] std::string log() const { return child_.log(); }
  Reply post(const std::string& body) const {
    return http(port(), "POST", "/api/v1/runs", body, kToken);
  }
  Reply post(const json& body) const { return post(body.dump()); }
  [[nodiscard]] json runs() const {
    const auto r = http(port(), "GET", "/api/v1/runs?limit=10000");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json::array();
  }
  void stop() { child_.stop(20s); }

 private:
  const testing::TempDir& dir_;
  testing::DaemonChild child_;
  int starts_ = 0;
};

// `depth` arrays nested around `inner`.
std::string nested(std::size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

TEST(HostileInputE2E, DeepNestingIsRefusedAndTheDaemonLives) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();

  // 47,000 levels inside a record (once SIGSEGV), 65,000 at the top level: about 130 KB each.
  std::string inside = record(1, 1'000'000).dump();
  inside.insert(inside.size() - 1, ",\"deep\":" + nested(47'000));
  const Reply deep_record = daemon.post(inside);
  EXPECT_EQ(deep_record.status, 400) << deep_record.body;
  EXPECT_NE(deep_record.body.find("nesting deeper than 256 levels"), std::string::npos)
      << deep_record.body;
  const Reply deep_top = daemon.post(nested(65'000));
  EXPECT_EQ(deep_top.status, 400) << deep_top.body;
  EXPECT_TRUE(daemon.alive()) << daemon.log();
  EXPECT_EQ(http(daemon.port(), "GET", "/healthz").status, 200);

  // At the limit the depth is no reason to refuse: the record is stored (an unknown field kept).
  std::string at_limit = record(2, 1'000'000).dump();
  at_limit.insert(at_limit.size() - 1, ",\"deep\":" + nested(255));
  const Reply ok = daemon.post(at_limit);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(daemon.runs().size(), 1u);
  daemon.stop();
}

TEST(HostileInputE2E, IntegersAreRangeCheckedExactlyAndNothingIsWrapped) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();

  // 2^63-1 and 2^63 (once stored as -2^63), a p20 of 2^63-1, 2^53+1, 0 and 1e400.
  for (const std::string median :
       {"9223372036854775807", "9223372036854775808", "18446744073709551615", "9007199254740993",
        "0", "1e400", "-1", "1.5"}) {
    std::string body = record(1, 1'000'000).dump();
    const std::string needle = "\"median\":1000000";
    ASSERT_NE(body.find(needle), std::string::npos);
    body.replace(body.find(needle), needle.size(), "\"median\":" + median);
    const Reply reply = daemon.post(body);
    EXPECT_EQ(reply.status, 400) << median << ": " << reply.body;
  }
  json p20 = record(1, 1'000'000);
  p20["run"]["spec"]["measurements"] =
      json::array({{{"metric", "latency"},
                    {"statistic", "p20"},
                    {"unit", "ns"},
                    {"value", std::int64_t{9223372036854775807}}}});
  EXPECT_EQ(daemon.post(p20).status, 400);
  EXPECT_TRUE(daemon.runs().empty());

  // 2^53 - 1 ns (the public schema's maximum) is the largest latency stored, and it reads back
  // exactly.
  const Reply largest = daemon.post(record(2, (std::int64_t{1} << 53) - 1));
  ASSERT_EQ(largest.status, 200) << largest.body;
  const json runs = daemon.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["run"]["spec"]["timing"]["latencyNs"]["median"].get<std::int64_t>(),
            (std::int64_t{1} << 53) - 1);
  daemon.stop();
  // And the daemon starts again on what it stored.
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  EXPECT_EQ(daemon.runs().size(), 1u);
  daemon.stop();
}

TEST(HostileInputE2E, TimestampsOutsideTheRangeAreRefusedNotWrapped) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  for (const char* at : {"9999-12-31T00:00:00Z", "2262-04-12T00:00:00Z", "1677-01-01T00:00:00Z",
                         "0001-01-01T00:00:00Z"}) {
    json body = record(1, 1'000'000);
    body["run"]["spec"]["observedAt"] = at;
    const Reply reply = daemon.post(body);
    EXPECT_EQ(reply.status, 400) << at << ": " << reply.body;
    EXPECT_NE(reply.body.find("outside the years 1678 to 2261"), std::string::npos) << reply.body;
  }
  EXPECT_TRUE(daemon.runs().empty());
  daemon.stop();
}

TEST(HostileInputE2E, ARunDatedInTheFutureIsRefusedAndCannotShadowItsKey) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  const core::Timestamp now = core::Timestamp::clock::now();
  // Ten quiet runs ending an hour ago.
  json baseline = json::array();
  for (int i = 0; i < 10; ++i) {
    baseline.push_back(
        record_at(now - 1h - std::chrono::minutes(10 - i), 1'000'000 + (i % 3) * 5'000));
  }
  ASSERT_EQ(daemon.post(baseline).status, 200);

  // A day ahead: refused, with the receiver's clock in the message; nothing stored.
  const Reply future = daemon.post(record_at(now + 24h, 1'000'000));
  EXPECT_EQ(future.status, 400) << future.body;
  EXPECT_NE(future.body.find("minutes after the receiver's clock"), std::string::npos)
      << future.body;
  EXPECT_EQ(daemon.runs().size(), 10u);

  // A 50% regression posted now is judged against the band and fires.
  const Reply step = daemon.post(record_at(now - 1min, 1'500'000));
  ASSERT_EQ(step.status, 200) << step.body;
  const json result = json::parse(step.body)["runs"][0];
  EXPECT_EQ(result["verdict"], "regression") << step.body;
  EXPECT_EQ(result["fired"].size(), 1u) << step.body;

  // Within the clock-skew tolerance a run is accepted.
  EXPECT_EQ(daemon.post(record_at(core::Timestamp::clock::now() + 1min, 1'000'000, "skew")).status,
            200);
  daemon.stop();
}

// What the old range check let through: a p20 of 2^63-1 kept as a double in the record
// (9.223372036854775807e18) and -2^63 in its column. Planted with SQLite's C API.
void plant_unreadable_rows(const std::filesystem::path& db) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  const char* sql =
      "UPDATE runs SET p20_ns = -9223372036854775808, record = json_set(record, "
      "'$.run.spec.measurements', json('[{\"metric\":\"latency\",\"statistic\":\"p20\","
      "\"unit\":\"ns\",\"value\":9.223372036854775807e18}]')) "
      "WHERE id = (SELECT min(id) FROM runs);"
      "UPDATE runs SET record = 'not json at all', median_ns = -9223372036854775808 "
      "WHERE id = (SELECT max(id) FROM runs);";
  char* error = nullptr;
  const int rc = sqlite3_exec(raw, sql, nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  EXPECT_EQ(sqlite3_changes(raw), 1);
  sqlite3_close(raw);
}

TEST(HostileInputE2E, AStoredRowThatCannotBeReadIsSkippedAndTheDaemonStarts) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  json batch = json::array();
  for (int i = 0; i < 6; ++i) batch.push_back(record(i, 1'000'000 + i * 1'000));
  ASSERT_EQ(daemon.post(batch).status, 200);
  daemon.stop();

  plant_unreadable_rows(dir / "kw.db");

  daemon.start();
  ASSERT_NE(daemon.port(), 0) << "the daemon must start on any stored row\n" << daemon.log();
  EXPECT_EQ(daemon.runs().size(), 4u);  // the two unreadable rows are left out
  EXPECT_NE(daemon.log().find("skipping an unreadable stored run"), std::string::npos)
      << daemon.log();
  // An operator sees them without reading the log: the status, its table and the metrics.
  const Reply status = http(daemon.port(), "GET", "/api/v1/status");
  ASSERT_EQ(status.status, 200);
  const json unreadable = json::parse(status.body)["unreadableRuns"];
  EXPECT_EQ(unreadable["count"], 2) << unreadable.dump();
  ASSERT_EQ(unreadable["reasons"].size(), 2u) << unreadable.dump();
  EXPECT_NE(unreadable["reasons"][0].get<std::string>().find("kw.db"), std::string::npos);
  const auto table = testing::run_kernelwatch(
      {"status", "--url", "http://127.0.0.1:" + std::to_string(daemon.port())});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("unreadable stored runs: 2"), std::string::npos) << table.out;
  EXPECT_NE(
      http(daemon.port(), "GET", "/metrics").body.find("kernelwatch_unreadable_stored_runs 2"),
      std::string::npos);
  // The key still judges new runs.
  const Reply next = daemon.post(record(10, 1'000'000));
  EXPECT_EQ(next.status, 200) << next.body;
  daemon.stop();

  const auto history = testing::run_kernelwatch({"history", "--db", (dir / "kw.db").string()});
  EXPECT_EQ(history.exit_code, 0) << history.err;
  EXPECT_NE(history.err.find("skipped an unreadable stored run"), std::string::npos) << history.err;
  EXPECT_NE(history.out.find("5 runs"), std::string::npos) << history.out;
  const auto backtest = testing::run_kernelwatch({"backtest", "--db", (dir / "kw.db").string()});
  EXPECT_EQ(backtest.exit_code, 0) << backtest.err;
}

TEST(HostileInputE2E, SighupWithANumberOutOfRangeKeepsTheRunningConfig) {
  testing::TempDir dir;
  Daemon daemon(dir);
  daemon.start();
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  std::string broken = daemon.config().dump();
  broken.insert(broken.size() - 1, ",\"detector\":{\"window\":1e400}");
  testing::write_file(dir / "kernelwatch.json", broken);
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  ASSERT_TRUE(eventually([&] {
    return daemon.log().find("keeping the running config") != std::string::npos || !daemon.alive();
  })) << daemon.log();
  EXPECT_TRUE(daemon.alive()) << daemon.log();
  EXPECT_NE(daemon.log().find("out of range"), std::string::npos) << daemon.log();
  EXPECT_EQ(http(daemon.port(), "GET", "/healthz").status, 200);
  EXPECT_EQ(daemon.post(record(1, 1'000'000)).status, 200);
  daemon.stop();
}

// A full disk in the middle of a posted batch, made real: the daemon's file-size limit is
// lowered (prlimit) to a little above what its files hold, with SIGXFSZ ignored so that writes
// fail with EFBIG instead of killing it. The batch is one transaction: 500 and none of it stored
// (it once answered 500 with part of the batch stored). With room again the same batch stores.
TEST(HostileInputE2E, APostedBatchIsOneTransactionEvenWhenTheDiskIsFull) {
  testing::TempDir dir;
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // inherited by the daemon
  Daemon daemon(dir);
  daemon.start();
  std::signal(SIGXFSZ, old_handler);
  ASSERT_NE(daemon.port(), 0) << daemon.log();
  ASSERT_EQ(daemon.post(record(0, 1'000'000, "baseline")).status, 200);

  std::uintmax_t largest = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.is_regular_file()) largest = std::max(largest, entry.file_size());
  }
  rlimit old{};
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, nullptr, &old), 0);
  rlimit full = old;
  full.rlim_cur = largest + 64 * 1024;
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, &full, nullptr), 0);

  json batch = json::array();
  for (int i = 0; i < 600; ++i) batch.push_back(record(i + 1, 1'000'000 + i, "batch"));
  const Reply refused = daemon.post(batch);
  EXPECT_EQ(refused.status, 500) << refused.body;
  EXPECT_TRUE(daemon.alive()) << daemon.log();
  EXPECT_EQ(daemon.runs().size(), 1u) << "a failed batch stored part of itself";

  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, &old, nullptr), 0);
  const Reply stored = daemon.post(batch);
  ASSERT_EQ(stored.status, 200) << stored.body;
  EXPECT_EQ(json::parse(stored.body)["stored"], 600);
  EXPECT_EQ(daemon.runs().size(), 601u);
  daemon.stop();
}

}  // namespace
}  // namespace kernelwatch
